"""Retrying with exponential backoff while a server (broker, database) is away."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Stopped(Exception):
    """Told to stop while waiting to try again."""


async def with_backoff(
    what: str,
    attempt: Callable[[], Awaitable[T]],
    *,
    retry_on: tuple[type[BaseException], ...],
    first: float = 0.1,
    most: float = 5.0,
    deadline: float | None = None,
    stop: asyncio.Event | None = None,
) -> T:
    """Call ``attempt`` until it succeeds, sleeping ``first``, then twice as long each
    time up to ``most`` seconds, after each failure listed in ``retry_on``. With a
    ``deadline`` (seconds), the last failure is raised once it would be passed. With
    ``stop``, :class:`Stopped` is raised when it is set between attempts: an attempt
    under way is never interrupted (a write cut off half way can leave its connection
    unusable)."""
    loop = asyncio.get_running_loop()
    give_up = None if deadline is None else loop.time() + deadline
    delay = first
    while True:
        if stop is not None and stop.is_set():
            raise Stopped(what)
        try:
            return await attempt()
        except retry_on as exc:
            if give_up is not None and loop.time() + delay > give_up:
                raise
            log.warning("%s failed (%s); retrying in %.1fs", what, _short(exc), delay)
            if stop is None:
                await asyncio.sleep(delay)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), delay)
            delay = min(delay * 2, most)


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) < 200 else text[:200] + "..."
