"""Filter plugins, in the default profile's order, and the FitError message.

Upstream: ``framework/plugins/nodeunschedulable``, ``tainttoleration``,
``nodeaffinity`` (nodeSelector part), ``noderesources/fit.go: fitsRequest``, run as
``RunFilterPlugins`` does: the first plugin that fails gives the node's status.
Nominated pods of at least the pod's priority are counted on their node
(``RunFilterPluginsWithNominatedPods``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.objects import Taint
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_UNSCHEDULABLE,
    tolerations_tolerate_taint,
)
from ledgerlet_core.scheduling.info import FIT_ORDER, NodeInfo, PodInfo

UNSCHEDULABLE: Final = "Unschedulable"
#: preemption cannot help: the node is never a candidate
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"

TOO_MANY_PODS: Final = "Too many pods"
NODE_UNSCHEDULABLE: Final = "node(s) were unschedulable"
SELECTOR_MISMATCH: Final = "node(s) didn't match Node's node affinity/selector"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One node's filter result: ``code`` "" when it fits."""

    code: str = ""
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def fits(self) -> bool:
        return not self.code


FITS: Final = NodeStatus()

UNSCHEDULABLE_TAINT: Final = Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


def untolerated_taint(pod: PodInfo, node: NodeInfo) -> str | None:
    """``TaintToleration.Filter``: the first NoSchedule/NoExecute taint the pod does not tolerate."""
    for taint in node.taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerations_tolerate_taint(pod.tolerations, taint):
            return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
    return None


def insufficient(pod: PodInfo, node: NodeInfo, extra: Iterable[PodInfo] = ()) -> list[str]:
    """``fitsRequest``: every shortage, pod count first, then cpu, memory, storage, scalars."""
    extra = list(extra)
    requested = dict(node.requested)
    for e in extra:
        for k, v in e.requests.items():
            requested[k] = requested.get(k, 0) + v
    out: list[str] = []
    if len(node.pods) + len(extra) + 1 > node.allowed_pods:
        out.append(TOO_MANY_PODS)
    if pod.requests_nothing:
        return out
    for name in FIT_ORDER:
        want = pod.requests.get(name, 0)
        if want > 0 and want > node.allocatable.get(name, 0) - requested.get(name, 0):
            out.append(f"Insufficient {name}")
    for name in sorted(k for k in pod.requests if k not in FIT_ORDER and k != "pods"):
        want = pod.requests[name]
        if want > 0 and want > node.allocatable.get(name, 0) - requested.get(name, 0):
            out.append(f"Insufficient {name}")
    return out


def run_filters(pod: PodInfo, node: NodeInfo, nominated: Iterable[PodInfo] = ()) -> NodeStatus:
    """The filter chain on one node, with nominated pods of >= priority counted there."""
    # NodeUnschedulable: tolerating the unschedulable taint is the normal rule
    # (``node_unschedulable.go: Filter`` -> ``TolerationsTolerateTaint``)
    if node.unschedulable and not tolerations_tolerate_taint(pod.tolerations, UNSCHEDULABLE_TAINT):
        return NodeStatus(UNRESOLVABLE, (NODE_UNSCHEDULABLE,), "NodeUnschedulable")
    taint = untolerated_taint(pod, node)
    if taint is not None:
        return NodeStatus(UNRESOLVABLE, (taint,), "TaintToleration")
    if any(node.labels.get(k) != v for k, v in pod.node_selector.items()):
        return NodeStatus(UNRESOLVABLE, (SELECTOR_MISMATCH,), "NodeAffinity")
    extra = [p for p in nominated if p.key != pod.key and p.priority >= pod.priority and p.key not in node.pods]
    short = insufficient(pod, node, extra)
    if short:
        return NodeStatus(UNSCHEDULABLE, tuple(short), "NodeResourcesFit")
    return FITS


def histogram(statuses: Iterable[NodeStatus]) -> str:
    """``FitError.Error``'s counts: "<n> <reason>" sorted as strings, joined by ", "."""
    counts: Counter[str] = Counter()
    for s in statuses:
        for r in s.reasons:
            counts[r] += 1
    return ", ".join(sorted(f"{n} {r}" for r, n in counts.items()))


def fit_error(num_nodes: int, statuses: Iterable[NodeStatus], post_filter: str = "") -> str:
    msg = f"0/{num_nodes} nodes are available: {histogram(statuses)}."
    return f"{msg} {post_filter}" if post_filter else msg
