"""Recently handled event ids, per run, so a redelivered event is not handled twice."""

from __future__ import annotations

from collections import OrderedDict


class RecentIds:
    """The ids handled in each run that has not ended (an ended run's events are skipped
    by its run id, so its ids are let go: what a service keeps, and a snapshot of it
    holds, follows the runs under way, not the history it has served)."""

    def __init__(self, capacity: int = 500_000) -> None:
        self._runs: dict[str, OrderedDict[str, None]] = {}
        self._capacity = capacity

    def seen(self, run: str, event_id: str) -> bool:
        """True if already handled; otherwise remember it and return False."""
        ids = self._runs.get(run)
        if ids is None:
            ids = self._runs[run] = OrderedDict()
        elif event_id in ids:
            return True
        ids[event_id] = None
        if len(ids) > self._capacity:
            ids.popitem(last=False)
        return False

    def forget(self, run: str) -> None:
        self._runs.pop(run, None)

    def __len__(self) -> int:
        return sum(len(ids) for ids in self._runs.values())
