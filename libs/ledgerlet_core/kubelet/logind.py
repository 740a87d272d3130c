"""logind's InhibitDelayMaxSec as the kubelet's shutdown manager meets it at start
(``nodeshutdown_manager_linux.go: start``).

``logindInhibitDelayMax`` is logind's value as the kubelet finds it. When the shutdown
periods ask for more, the kubelet writes its drop-in
(``/etc/systemd/logind.conf.d/99-kubelet.conf``), reloads logind and reads the value again,
up to 5 times with a backoff; ``logindInhibitDelayMaxAfterReload`` is what logind then
reports (by default the raise takes effect). Still below the request, the manager fails to
start: it holds no inhibitor lock, so no shutdown of that node is graceful.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.duration import SECOND, format_duration

#: ``wait.Backoff.Steps`` of the shutdown manager's wait for the reload
RELOAD_ATTEMPTS: Final = 5


@dataclass(frozen=True, slots=True)
class InhibitDelay:
    """Seconds: as found, as logind holds it once the manager has started (or failed)."""

    found: int
    effective: int
    raised: bool
    #: the manager's start error ("" when it started)
    error: str = ""


def inhibit_delay(requested_seconds: int, found_ns: int, after_reload_ns: int | None) -> InhibitDelay:
    """``requested_seconds``: the sum of the shutdown periods (``periodRequested``)."""
    requested = requested_seconds * SECOND
    if requested <= found_ns:
        return InhibitDelay(found_ns // SECOND, found_ns // SECOND, raised=False)
    updated = requested if after_reload_ns is None else after_reload_ns
    error = ""
    if requested > updated:
        error = (
            f"node shutdown manager was timed out after {RELOAD_ATTEMPTS} attempts waiting for logind "
            f"InhibitDelayMaxSec to update to {format_duration(requested)} (ShutdownGracePeriod), "
            f"current value is {format_duration(updated)}"
        )
    return InhibitDelay(found_ns // SECOND, updated // SECOND, raised=True, error=error)
