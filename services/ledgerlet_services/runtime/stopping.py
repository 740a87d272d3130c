"""A service's stop on SIGTERM, bounded in time whatever it waits for.

On the first SIGTERM (or SIGINT) the service stops taking input and tries to leave
cleanly: it finishes its batch, commits, checkpoints or hands its members over, releases
its leases and closes its clients. Each of those steps has a patience of its own, but a
broker, a database or a driver that is gone, or a machine short of memory, can still
hold one up (a thread reading a child's pickle, a lock, a fold that does not yield), and
four services were once seen to ignore SIGTERM for more than 20 s until they were killed.
So the first signal also starts a watchdog: if the process has not ended ``budget``
seconds later it logs what it had not finished and where its main thread was, and exits
anyway (exit 0: the stop was asked for). A second SIGTERM or SIGINT exits at once (128 +
the signal's number). Should even the watchdog's thread not get to run (the interpreter
held by one long call), SIGALRM's default action ends the process a second later.

Leaving unfinished is safe: a batch whose commit did not reach the broker is read again
by whoever reads the group next, and every consumer is idempotent (events carry ids the
store and the runners know), so it is neither lost nor applied twice; nothing is
acknowledged before it is stored. A lease is a database session, which ends with the
process: the member's next host takes it from its newest snapshot and folds the rest.

The budget is ``LEDGERLET_STOP_BUDGET`` seconds (default :data:`DEFAULT_STOP_BUDGET`),
to be set comfortably below the orchestrator's grace period (compose's
``stop_grace_period``, 10 s unless set; Kubernetes' ``terminationGracePeriodSeconds``)."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Final

log = logging.getLogger(__name__)

#: seconds from the first SIGTERM to the exit, cleanly or not: compose's default
#: stop_grace_period is 10 s, and the broker-away path alone (a commit's 2 s, each Kafka
#: client's 2 s) takes up to 6 s
DEFAULT_STOP_BUDGET: Final = 8.0
STOP_BUDGET_ENV: Final = "LEDGERLET_STOP_BUDGET"
#: the exit code when the budget ran out: the stop was asked for, and nothing is lost
EXIT_BUDGET_SPENT: Final = 0
SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)

#: the steps of the stop under way (what the watchdog names if the budget runs out)
_steps: list[str] = []
_steps_lock = threading.Lock()


@contextlib.contextmanager
def step(what: str) -> Iterator[None]:
    """Name a step of the stop while it runs (the watchdog lists those not finished)."""
    with _steps_lock:
        _steps.append(what)
    try:
        yield
    finally:
        with _steps_lock, contextlib.suppress(ValueError):
            _steps.remove(what)


def begin(what: str) -> None:
    """Name a step that lasts until the process ends (leaving the event loop, say)."""
    with _steps_lock:
        _steps.append(what)


def unfinished() -> list[str]:
    with _steps_lock:
        return list(_steps)


class StopBudget:
    """SIGTERM and SIGINT for a service process: the first calls ``request_stop`` and
    starts the watchdog, a second exits at once. Python runs the handler between two
    bytecodes of the main thread, so a loop busy folding sees the signal too (an asyncio
    signal handler waits for the loop's next turn)."""

    def __init__(
        self,
        budget: float,
        request_stop: Callable[[], object],
        *,
        exit: Callable[[int], None] = os._exit,
        name: str = "service",
        backstop: bool = True,
    ) -> None:
        self.budget = budget
        self.backstop = backstop
        self.request_stop = request_stop
        self.name = name
        self._exit = exit
        #: the first signal's name, once it came
        self._first: str | None = None
        self._done = threading.Event()
        self._watchdog: threading.Thread | None = None

    def install(self) -> None:
        for sig in SIGNALS:
            signal.signal(sig, self._on_signal)

    def _on_signal(self, signum: int, frame: object) -> None:
        name = signal.Signals(signum).name
        if self._first is None:
            self._first = name
            log.info("%s: %s: stopping (batch, commit, hand-over) within %gs", self.name, name, self.budget)
            if self.backstop:  # should the watchdog's thread never run, SIGALRM's default ends the process
                signal.signal(signal.SIGALRM, signal.SIG_DFL)
                signal.alarm(math.ceil(self.budget) + 1)
            self._watchdog = threading.Thread(target=self._watch, name="stop-budget", daemon=True)
            self._watchdog.start()
            with contextlib.suppress(RuntimeError):  # (the event loop already closed: the process is ending)
                self.request_stop()
            return
        left = ", ".join(unfinished()) or "nothing named"
        log.warning("%s: second %s: exiting at once (unfinished: %s)", self.name, name, left)
        _flush_logs()
        self._exit(128 + signum)

    def _watch(self) -> None:
        if self._done.wait(self.budget):
            return
        left = ", ".join(unfinished()) or "nothing named"
        log.warning(
            "%s: not stopped %gs after %s, exiting anyway; unfinished: %s; main thread at %s "
            "(an uncommitted batch is read again by the group's next reader; nothing stored is lost)",
            self.name,
            self.budget,
            self._first,
            left,
            _main_thread_at(),
        )
        _flush_logs()
        self._exit(EXIT_BUDGET_SPENT)

    def finished(self) -> None:
        """The stop is done (the process is about to end): the watchdog stands down.
        The alarm stays: what is left of the interpreter's exit is bounded by it too."""
        self._done.set()


def _main_thread_at() -> str:
    frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if frame is None:
        return "(unknown)"
    code = frame.f_code
    return f"{code.co_filename}:{frame.f_lineno} ({code.co_name})"


def _flush_logs() -> None:
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
