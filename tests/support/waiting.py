"""Waiting for the runtime without guessing how long it takes: poll for the state wanted,
or count the turns a loop has taken (its heartbeat), never sleep a fixed time and hope.

A test that checks that something does *not* happen (a member stays where it is, a
checkpoint waits for its turn) lets the runtime take a number of turns and then looks:
what it counts is the runtime's own progress, so a slow machine makes it slower, not wrong.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

#: how often a condition is looked at
EVERY = 0.01


async def until(test: Callable[[], bool], timeout: float = 10.0, what: str = "") -> None:
    """Return once ``test()`` holds; fail after ``timeout`` seconds, saying ``what``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not test():
        if loop.time() > deadline:
            raise AssertionError(f"not so after {timeout:g} s: {what or test}")
        await asyncio.sleep(EVERY)


class Turns:
    """Counts a loop's turns (hand :meth:`beat` over as its heartbeat)."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = asyncio.Event()

    def beat(self) -> None:
        self.count += 1
        self._changed.set()

    async def more(self, n: int, timeout: float = 10.0) -> None:
        """Return once the loop has turned ``n`` more times."""
        target = self.count + n
        async with asyncio.timeout(timeout):
            while self.count < target:
                self._changed.clear()
                await self._changed.wait()
