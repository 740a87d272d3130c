"""The stop budget's watchdog and signals in one process, with the exit replaced: the
first SIGTERM asks the service to stop and starts the watchdog; the budget spent, it
exits 0 naming what was unfinished; a stop that ends in time is left alone; a second
signal exits at once. (The real processes: tests/distributed/test_stop_budget.py.)"""

from __future__ import annotations

import logging
import signal
import threading

import pytest

from ledgerlet_services.runtime import stopping


class Exits:
    """Stands in for ``os._exit``: records the code instead of ending the test run."""

    def __init__(self) -> None:
        self.codes: list[int] = []
        self.called = threading.Event()

    def __call__(self, code: int) -> None:
        self.codes.append(code)
        self.called.set()


def _budget(seconds: float, exits: Exits, asked: threading.Event) -> stopping.StopBudget:
    return stopping.StopBudget(seconds, asked.set, exit=exits, name="svc", backstop=False)


def test_the_budget_spent_it_exits_0_naming_what_was_unfinished(caplog: pytest.LogCaptureFixture) -> None:
    exits, asked = Exits(), threading.Event()
    budget = _budget(0.05, exits, asked)
    with caplog.at_level(logging.INFO), stopping.step("svc: closing the event store"):
        budget._on_signal(signal.SIGTERM, None)
        assert asked.is_set()
        assert exits.called.wait(10)
    assert exits.codes == [stopping.EXIT_BUDGET_SPENT]
    line = next(r.getMessage() for r in caplog.records if "exiting anyway" in r.getMessage())
    assert "unfinished: svc: closing the event store" in line and "main thread at " in line
    assert stopping.unfinished() == []  # (the step ended with its block)


def test_a_stop_that_ends_in_time_is_left_alone() -> None:
    exits, asked = Exits(), threading.Event()
    budget = _budget(0.05, exits, asked)
    budget._on_signal(signal.SIGTERM, None)
    budget.finished()
    assert budget._watchdog is not None
    budget._watchdog.join(10)
    assert not budget._watchdog.is_alive() and exits.codes == []


def test_a_second_signal_exits_at_once(caplog: pytest.LogCaptureFixture) -> None:
    exits, asked = Exits(), threading.Event()
    budget = _budget(600, exits, asked)
    with caplog.at_level(logging.INFO), stopping.step("svc: handing over members [0, 3]"):
        budget._on_signal(signal.SIGTERM, None)
        assert exits.codes == []
        budget._on_signal(signal.SIGINT, None)
    assert exits.codes == [128 + signal.SIGINT]  # (in the handler, not after the budget)
    assert "second SIGINT: exiting at once (unfinished: svc: handing over members [0, 3])" in caplog.text
    budget.finished()


def test_install_takes_sigterm_from_the_loop() -> None:
    """A real SIGTERM reaches the handler (Python's own: it runs between two bytecodes of
    the main thread, even while an event loop is busy)."""
    exits, asked = Exits(), threading.Event()
    budget = _budget(600, exits, asked)
    before = {s: signal.getsignal(s) for s in stopping.SIGNALS}
    try:
        budget.install()
        signal.raise_signal(signal.SIGTERM)
        assert asked.is_set() and exits.codes == []
    finally:
        budget.finished()
        for s, handler in before.items():
            signal.signal(s, handler)


def test_a_signal_after_the_event_loop_closed_raises_nothing() -> None:
    """SIGTERM while the process leaves (its loop closed): no exception where the main
    thread happens to be, only the watchdog bounding what is left."""
    import asyncio

    loop = asyncio.new_event_loop()
    loop.close()
    exits = Exits()
    budget = stopping.StopBudget(600, lambda: loop.call_soon_threadsafe(lambda: None), exit=exits, backstop=False)
    budget._on_signal(signal.SIGTERM, None)  # (call_soon_threadsafe raises on a closed loop)
    assert budget._watchdog is not None and budget._watchdog.is_alive() and exits.codes == []
    budget.finished()
