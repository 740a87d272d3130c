"""The kernel's side of memory pressure: when memory runs out before the kubelet acts.

* A container whose working set goes over its memory limit is killed by its cgroup.
* When the pods together outgrow the kubepods cgroup (node allocatable enforced), or
  everything on the node outgrows its memory, the OOM killer picks the container with
  the highest ``oom_score`` = its share of memory in per-mille + ``oom_score_adj``
  (``mm/oom_kill.c: oom_badness``; adj from ``pkg/kubelet/qos/policy.go``), and repeats
  until memory fits.
* A killed container restarts per the pod's ``restartPolicy`` with the kubelet's
  back-off: the first restart once the kubelet notices (1 s), then 10 s doubling to 5 min
  (``pkg/kubelet/kubelet.go: backOffPeriod``, ``MaxContainerBackOff``).

Usage is piecewise-linear, so the instant a sum of series crosses a level is found
exactly (to the nanosecond), which is also what ``kernelMemcgNotification`` needs: the
kubelet hears of the crossing when it happens, not at its next housekeeping pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Final

from ledgerlet_core.model.usage import Series

BACKOFF_PERIOD: Final = 10 * 10**9
MAX_BACKOFF: Final = 300 * 10**9
#: the first restart waits for the kubelet to notice the exit (``plegRelistPeriod``)
PLEG_RELIST_PERIOD: Final = 10**9


def restart_delay(restarts: int) -> int:
    """Back-off before the ``restarts``-th restart (1-based): 1 s, then 10 s, 20 s, ... 5 min."""
    if restarts <= 1:
        return PLEG_RELIST_PERIOD
    delay: int = BACKOFF_PERIOD * 2 ** (restarts - 2)
    return min(delay, MAX_BACKOFF)


def restarts_after_oom(restart_policy: str) -> bool:
    """An OOM kill is a failure: ``Always`` and ``OnFailure`` restart, ``Never`` does not."""
    return restart_policy in ("Always", "OnFailure", "")


def _total(series: Sequence[Series], t: int) -> int:
    return sum(s.at(t) for s in series)


def first_crossing(
    series: Sequence[Series], level: int, start: int, end: int, *, inclusive: bool = False
) -> int | None:
    """The first instant ``t`` in ``(start, end]`` where ``sum(series(t)) > level``, having
    been at or under it at ``start``: a crossing. Already over at ``start``: ``start`` when
    ``inclusive`` (act now), else ``None`` (a state, not an event).

    Between the series' points the sum is linear (up to integer rounding), so each
    segment is searched by bisection on whole nanoseconds.
    """
    if sum(s.at(start) for s in series) > level:
        return start if inclusive else None
    if end <= start:
        return None
    moving = [s for s in series if s.fixed is None]
    fixed = sum(s.fixed for s in series if s.fixed is not None)
    if not moving:
        return None
    cuts = sorted({t for s in moving for t in s.times if start < t < end})
    edges = [start + 1, *cuts, end]
    for lo, hi in pairwise(edges):
        if fixed + _total(moving, lo) > level:
            return lo
        if fixed + _total(moving, hi) <= level:
            continue
        while hi - lo > 1:  # invariant: lo not above, hi above
            mid = (lo + hi) // 2
            if fixed + _total(moving, mid) > level:
                hi = mid
            else:
                lo = mid
        return hi
    return None


@dataclass(frozen=True, slots=True)
class OOMCandidate:
    pod: str
    container: str
    usage: int
    oom_score_adj: int


def oom_score(c: OOMCandidate, total: int) -> int:
    """``oom_badness`` in per-mille of ``total``, plus the adjustment."""
    return (c.usage * 1000) // max(total, 1) + c.oom_score_adj


def pick_victim(candidates: Sequence[OOMCandidate], total: int) -> OOMCandidate | None:
    """The container the OOM killer takes: highest score; the first of equals."""
    best: OOMCandidate | None = None
    for c in candidates:
        if c.usage <= 0:
            continue
        if best is None or oom_score(c, total) > oom_score(best, total):
            best = c
    return best


@dataclass(slots=True)
class ContainerRun:
    """One container's memory and whether it is running, restarting or gone for good."""

    pod: str
    container: str
    memory: Series | None
    limit: int | None
    oom_score_adj: int
    restart_policy: str
    restarts: int = 0
    #: ``None`` while running; the instant it restarts while backing off
    down_until: int | None = None
    dead: bool = False

    def running(self, t: int) -> bool:
        return not self.dead and (self.down_until is None or self.down_until <= t)

    def usage(self, t: int) -> int:
        return self.memory.at(t) if self.memory is not None and self.running(t) else 0


@dataclass(frozen=True, slots=True)
class Kill:
    pod: str
    container: str
    #: ``limit`` (the container's own cgroup), ``pods`` (the kubepods cgroup) or ``node``
    scope: str
    usage: int
    limit: int
    oom_score_adj: int
    oom_score: int
    restarts: int
    restart_at: int | None
    #: every container of the pod is gone and will not restart: the pod has failed
    pod_failed: bool


class NodeMemory:
    """The memory of one node as the kernel sees it: containers, cgroup limits, OOM kills.

    Deterministic and clock-free: callers say what time it is.
    """

    def __init__(self, capacity: int, system: Series, pods_limit: int | None) -> None:
        self.capacity = capacity
        self.system = system
        self.pods_limit = pods_limit
        self.runs: dict[tuple[str, str], ContainerRun] = {}
        #: bumped whenever a run comes, goes or changes (what _Index is worked out from)
        self._version = 0
        self._index: _Index | None = None

    def add(self, run: ContainerRun) -> None:
        self.runs[(run.pod, run.container)] = run
        self._version += 1

    def remove_pod(self, pod: str) -> None:
        for key in [k for k in self.runs if k[0] == pod]:
            del self.runs[key]
        self._version += 1

    def _indexed(self) -> _Index:
        """The runs that can make something happen, kept while no run changes: a node's
        kernel is asked every pass, and on most nodes nothing is down or near a limit."""
        index = self._index
        if index is None or index.version != self._version:
            runs = self.runs.values()
            series = [r.memory for r in runs if r.memory is not None]
            index = self._index = _Index(
                version=self._version,
                down=[r for r in runs if r.dead or r.down_until is not None],
                risky=[r for r in runs if r.limit is not None and r.memory is not None and r.memory.peak > r.limit],
                series=series,
                peak=sum(s.peak for s in series),
            )
        return index

    def stopped(self, t: int) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for r in self._indexed().down:  # (every other run is running)
            if not r.running(t):
                out.setdefault(r.pod, set()).add(r.container)
        return out

    def _running_series(self, t: int) -> list[Series]:
        index = self._indexed()
        if not index.down:
            return index.series
        return [r.memory for r in self.runs.values() if r.memory is not None and r.running(t)]

    def next_oom(self, after: int, until: int, *, inclusive: bool = True) -> int | None:
        """The first instant in ``[after, until]`` something is over a limit, or restarts.

        Right after acting, pass ``inclusive=False``: what could not be fixed then (system
        memory alone over capacity) is not an event to act on again. A limit a series can
        never reach (its peak is under it) is not searched: the common case, kept cheap."""
        times: list[int] = []
        index = self._indexed()
        for r in index.down:
            if not r.dead and r.down_until is not None and after < r.down_until <= until:
                times.append(r.down_until)
        for r in index.risky:  # (only a run whose peak is over its limit can cross it)
            if not r.dead and r.running(after):
                assert r.limit is not None and r.memory is not None
                hit = first_crossing([r.memory], r.limit, after, until, inclusive=inclusive)
                if hit is not None:
                    times.append(hit)
        pods = self._running_series(after)
        peak = index.peak if not index.down else sum(s.peak for s in pods)
        if self.pods_limit is not None and peak > self.pods_limit:
            hit = first_crossing(pods, self.pods_limit, after, until, inclusive=inclusive)
            if hit is not None:
                times.append(hit)
        if peak + self.system.peak > self.capacity:
            hit = first_crossing([self.system, *pods], self.capacity, after, until, inclusive=inclusive)
            if hit is not None:
                times.append(hit)
        return min(times) if times else None

    def next_crossing(self, level: int, after: int, until: int, *, pods_only: bool = False) -> int | None:
        """When the working set (the pods' alone, with ``pods_only``) first exceeds ``level``."""
        series = self._running_series(after)
        index = self._indexed()
        peak = index.peak if not index.down else sum(s.peak for s in series)
        if not pods_only:
            series = [self.system, *series]
            peak += self.system.peak
        if peak <= level:
            return None
        return first_crossing(series, level, after, until)

    def act(self, t: int) -> list[Kill]:
        """What the kernel does at ``t``: restarts come due, then every limit is enforced."""
        self._version += 1
        for r in self.runs.values():
            if r.down_until is not None and r.down_until <= t:
                r.down_until = None
        kills: list[Kill] = []
        for r in self.runs.values():
            if r.limit is not None and r.running(t) and r.usage(t) > r.limit:
                kills.append(self._kill(r, t, "limit", r.limit))
        if self.pods_limit is not None:
            kills += self._until_fits(t, "pods", self.pods_limit, with_system=False)
        kills += self._until_fits(t, "node", self.capacity, with_system=True)
        return kills

    def _until_fits(self, t: int, scope: str, limit: int, *, with_system: bool) -> list[Kill]:
        kills: list[Kill] = []
        while True:
            live = [r for r in self.runs.values() if r.running(t)]
            used = sum(r.usage(t) for r in live) + (self.system.at(t) if with_system else 0)
            if used <= limit:
                return kills
            victim = pick_victim([OOMCandidate(r.pod, r.container, r.usage(t), r.oom_score_adj) for r in live], limit)
            if victim is None:
                return kills  # what is left is not the pods' (system memory): nothing to kill
            kills.append(self._kill(self.runs[(victim.pod, victim.container)], t, scope, limit))

    def _kill(self, r: ContainerRun, t: int, scope: str, limit: int) -> Kill:
        self._version += 1
        usage = r.usage(t)
        score = oom_score(OOMCandidate(r.pod, r.container, usage, r.oom_score_adj), limit)
        r.restarts += 1
        if restarts_after_oom(r.restart_policy):
            r.down_until = t + restart_delay(r.restarts)
        else:
            r.dead = True
            r.down_until = None
        failed = all(x.dead for x in self.runs.values() if x.pod == r.pod)
        return Kill(r.pod, r.container, scope, usage, limit, r.oom_score_adj, score, r.restarts, r.down_until, failed)


@dataclass(frozen=True, slots=True)
class _Index:
    """The runs of a node's kernel as of one version: those down or dead (the others are
    running), those whose peak is over their own limit, and every run's memory series
    with the sum of their peaks."""

    version: int
    down: list[ContainerRun]
    risky: list[ContainerRun]
    series: list[Series]
    peak: int
