"""A fleet's evictions summarised before they are told one by one: grouped by signal, node
pool and minute; counted over time; the namespaces and pods that lost most.

A 500-node run with 50 evictions is one incident seen 50 times; its reader wants the
shape first (which signal, which pool, when) and a way down to any one node.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

#: node labels that name a node's pool, most specific first (Karpenter, GKE, EKS, AKS,
#: then the instance type every cloud's node controller sets)
POOL_LABELS: Final = (
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "eks.amazonaws.com/nodegroup",
    "alpha.eksctl.io/nodegroup-name",
    "kubernetes.azure.com/agentpool",
    "agentpool",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
)
NO_POOL: Final = "(none)"
#: bucket widths the histogram may use, in seconds: the first that keeps it to MAX_BARS
BUCKETS: Final = (10, 30, 60, 300, 900, 3600, 6 * 3600, 86400)
MAX_BARS: Final = 60
TOP: Final = 10


def node_pool(labels: Mapping[str, Any] | None) -> tuple[str, str]:
    """(label, value) of the first pool label a node carries; ("", NO_POOL) for none."""
    for key in POOL_LABELS:
        value = (labels or {}).get(key)
        if isinstance(value, str) and value:
            return key, value
    return "", NO_POOL


@dataclass(frozen=True)
class Evicted:
    """One eviction, as the summary counts it."""

    t: float  # seconds into the run
    minute: str  # ``HH:MM`` of its clock time (UTC)
    node: str
    pod: str
    signal: str
    threshold: str
    pool: str = NO_POOL
    #: the pod's usage of the resource when it was ranked (None: no stats)
    usage: int | None = None
    unit: str = "bytes"

    @property
    def namespace(self) -> str:
        return self.pod.split("/", 1)[0] if "/" in self.pod else ""


@dataclass
class Group:
    signal: str
    pool: str
    minute: str
    evictions: int
    nodes: list[str]
    pods: list[str]


@dataclass
class Bucket:
    t_from: float
    #: signal -> evictions in [t_from, t_from + width)
    counts: dict[str, int]


@dataclass
class Ranked:
    """A namespace or pod and what it lost."""

    name: str
    evictions: int
    nodes: int
    signals: list[str]
    usage: int | None = None
    unit: str = "bytes"


@dataclass
class Summary:
    evictions: int
    nodes: int
    t_first: float
    t_last: float
    #: signal -> (evictions, the thresholds met, as written)
    by_signal: dict[str, tuple[int, list[str]]]
    #: pool -> evictions
    by_pool: dict[str, int]
    #: the label the pools were told by ("" when no node had one)
    pool_label: str
    groups: list[Group]
    width: int
    buckets: list[Bucket]
    namespaces: list[Ranked]
    pods: list[Ranked]
    busiest_minute: tuple[str, int] = ("", 0)
    signals: list[str] = field(default_factory=list)


def bucket_width(duration: float) -> int:
    """The narrowest width in BUCKETS that draws the run in at most MAX_BARS bars."""
    return next((w for w in BUCKETS if duration / w <= MAX_BARS), BUCKETS[-1])


def summarise(evicted: Sequence[Evicted], duration: float, pool_label: str = "") -> Summary:
    """Every figure the summary shows, from the evictions alone."""
    ordered = sorted(evicted, key=lambda e: (e.t, e.node, e.pod))
    signals = list(dict.fromkeys(e.signal for e in sorted(ordered, key=lambda e: e.signal)))
    by_signal: dict[str, tuple[int, list[str]]] = {}
    for s in signals:
        mine = [e for e in ordered if e.signal == s]
        by_signal[s] = (len(mine), sorted({e.threshold for e in mine}))
    by_pool = dict(Counter(e.pool for e in ordered).most_common())

    grouped: dict[tuple[str, str, str], list[Evicted]] = defaultdict(list)
    for e in ordered:
        grouped[(e.signal, e.pool, e.minute)].append(e)
    groups = [
        Group(s, p, m, len(es), list(dict.fromkeys(e.node for e in es)), [e.pod for e in es])
        for (s, p, m), es in grouped.items()
    ]
    groups.sort(key=lambda g: (g.minute, -g.evictions, g.signal, g.pool))
    minutes = Counter(e.minute for e in ordered)
    busiest = min(minutes.items(), key=lambda kv: (-kv[1], kv[0])) if minutes else ("", 0)  # earliest on a tie

    width = bucket_width(max(duration, ordered[-1].t if ordered else 0.0, 1.0))
    counts: dict[int, Counter[str]] = defaultdict(Counter)
    for e in ordered:
        counts[int(e.t // width)][e.signal] += 1
    last = int(max(duration, ordered[-1].t if ordered else 0.0) // width)
    buckets = [Bucket(float(i * width), dict(counts.get(i, Counter()))) for i in range(last + 1)]

    return Summary(
        evictions=len(ordered),
        nodes=len({e.node for e in ordered}),
        t_first=ordered[0].t if ordered else 0.0,
        t_last=ordered[-1].t if ordered else 0.0,
        by_signal=by_signal,
        by_pool=by_pool,
        pool_label=pool_label,
        groups=groups,
        width=width,
        buckets=buckets,
        namespaces=_ranked(ordered, lambda e: e.namespace),
        pods=_ranked(ordered, lambda e: e.pod, usage=True),
        busiest_minute=busiest,
        signals=signals,
    )


def _ranked(evicted: Sequence[Evicted], key: Any, *, usage: bool = False) -> list[Ranked]:
    """The TOP names by evictions, then by the most usage at eviction, then by name."""
    by: dict[str, list[Evicted]] = defaultdict(list)
    for e in evicted:
        by[key(e)].append(e)
    out = []
    for name, es in by.items():
        used = [e.usage for e in es if e.usage is not None]
        out.append(
            Ranked(
                name=name,
                evictions=len(es),
                nodes=len({e.node for e in es}),
                signals=sorted({e.signal for e in es}),
                usage=max(used) if usage and used else None,
                unit=es[0].unit,
            )
        )
    out.sort(key=lambda r: (-r.evictions, -(r.usage or 0), r.name))
    return out[:TOP]
