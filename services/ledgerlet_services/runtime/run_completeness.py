"""What a distributed run must have stored before its driver may call it completed.

The driver waits, at every step, until every service group has committed all it reads,
and, at the end, until the recorder has; but "committed" only says a group moved on,
not that what it read reached the store. A 5,000-node run was once seen to end with
exit 0 and no decisions at all. So before ``drive`` stores ``RunEnded(completed)`` it
checks that every input, tick and end it published is in the store; a run short of
any is stored as failed, with what is missing named, and ``drive`` exits 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class RunShortfall(RuntimeError):
    """The run ended without storing everything its driver published."""


class KnowsIds(Protocol):
    async def known(self, ids: Sequence[str]) -> set[str]: ...


#: ids named in a shortfall's message (the rest are counted)
NAMED = 3


async def unstored(store: KnowsIds, published: Sequence[str]) -> list[str]:
    """The ids of ``published`` the store does not hold, in the order they were published."""
    held = await store.known(published)
    return [i for i in dict.fromkeys(published) if i not in held]


def shortfall_reason(run: str, missing: Sequence[str], published: int) -> str:
    """Say what a run is short of, for the run's RunEnded and for the operator."""
    shown = ", ".join(missing[:NAMED]) + (f" and {len(missing) - NAMED:,} more" if len(missing) > NAMED else "")
    return (
        f"run {run}: {len(missing):,} of the {published:,} inputs and clock ticks the driver published "
        f"were not stored ({shown}): is the recorder running and writing to this store?"
    )
