"""Recently handled event ids, so a redelivered event is not handled twice."""

from __future__ import annotations

from collections import OrderedDict


class RecentIds:
    def __init__(self, capacity: int = 500_000) -> None:
        self._ids: OrderedDict[str, None] = OrderedDict()
        self._capacity = capacity

    def seen(self, event_id: str) -> bool:
        """True if already handled; otherwise remember it and return False."""
        if event_id in self._ids:
            return True
        self._ids[event_id] = None
        if len(self._ids) > self._capacity:
            self._ids.popitem(last=False)
        return False
