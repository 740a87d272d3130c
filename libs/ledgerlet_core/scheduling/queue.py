"""The scheduling queue: activeQ order, backoff, and the unschedulable pool.

Upstream: ``framework/plugins/queuesort/priority_sort.go: Less`` (priority, then queue
timestamp), ``backend/queue/backoff_queue.go: calculateBackoffDuration`` (initial
doubled per attempt, capped) and ``scheduling_queue.go`` (failed pods wait in the
unschedulable pool until a cluster event moves them, at most 5 minutes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.duration import SECOND

#: DefaultPodMaxInUnschedulablePodsDuration
MAX_IN_UNSCHEDULABLE: Final = 300 * SECOND


def backoff_duration(attempts: int, initial: int, maximum: int) -> int:
    """0 for a pod never tried; else ``initial`` doubled ``attempts - 1`` times, at most ``maximum``."""
    if attempts <= 0:
        return 0
    d = initial
    for _ in range(attempts - 1):
        if d >= maximum:
            return maximum
        d *= 2
    return min(d, maximum)


@dataclass(slots=True)
class QueuedPod:
    key: str
    priority: int
    #: when it was (re-)added to the queue (ns), and a tie-break for equal timestamps
    timestamp: int
    seq: int
    attempts: int = 0
    #: "active" (may be tried at ``ready_at``) or "unschedulable" (waits for a cluster event)
    state: str = "active"
    ready_at: int = 0
    #: the plugins that refused it at its last attempt (which events may help it)
    plugins: frozenset[str] = frozenset()

    def sort_key(self) -> tuple[int, int, int]:
        return (-self.priority, self.timestamp, self.seq)


def ready(queue: dict[str, QueuedPod], now: int) -> list[QueuedPod]:
    """Pods that may be tried now, in activeQ order."""
    return sorted((q for q in queue.values() if q.state == "active" and q.ready_at <= now), key=QueuedPod.sort_key)


def failed(q: QueuedPod, now: int, plugins: frozenset[str] = frozenset()) -> None:
    """After a failed attempt: into the unschedulable pool, stamped now."""
    q.attempts += 1
    q.timestamp = now
    q.state = "unschedulable"
    q.plugins = plugins


def move_all(queue: dict[str, QueuedPod], now: int, initial: int, maximum: int) -> list[int]:
    """A cluster event: unschedulable pods go back, each once its backoff is over.
    Returns the times at which they become ready."""
    times = []
    for q in queue.values():
        if q.state == "unschedulable":
            q.state = "active"
            q.ready_at = max(now, q.timestamp + backoff_duration(q.attempts, initial, maximum))
            times.append(q.ready_at)
    return times


def flush_stale(queue: dict[str, QueuedPod], now: int, initial: int, maximum: int) -> list[int]:
    """Pods unschedulable for longer than 5 minutes go back without an event."""
    times = []
    for q in queue.values():
        if q.state == "unschedulable" and now - q.timestamp > MAX_IN_UNSCHEDULABLE:
            q.state = "active"
            q.ready_at = max(now, q.timestamp + backoff_duration(q.attempts, initial, maximum))
            times.append(q.ready_at)
    return times
