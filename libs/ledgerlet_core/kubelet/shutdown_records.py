"""The graceful shutdown's plan as its ``NodeShutdownStarted`` record."""

from __future__ import annotations

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.kubelet.graceful_shutdown import Plan
from ledgerlet_core.kubelet.logind import InhibitDelay
from ledgerlet_core.model.duration import SECOND

SHUTDOWN_DETECTED = "Shutdown manager detected shutdown event"


def shutdown_started(
    plan: Plan, *, requested: int, logind: InhibitDelay, source: str, start_time_seconds: float
) -> dec.NodeShutdownStarted:
    """``requested``: the seconds the groups ask for; ``logind``: InhibitDelayMaxSec as found
    and as the manager left it. The kubelet raises logind's delay to what it needs with a
    drop-in, and says so."""
    message = SHUTDOWN_DETECTED
    if logind.raised:
        message += (
            f"; logind InhibitDelayMaxSec raised from {logind.found}s to {requested}s by the kubelet's "
            "drop-in /etc/systemd/logind.conf.d/99-kubelet.conf"
        )
        if logind.effective != requested:
            message += f" (logind reports {logind.effective}s after the reload)"
    return dec.NodeShutdownStarted(
        graceful=True,
        groups=[
            dec.ShutdownGroup(
                priority=g.priority,
                grace_period_seconds=g.seconds,
                pods=g.pods,
                start=g.start / SECOND if g.start is not None else None,
                end=g.end / SECOND if g.end is not None else None,
                ended_by=g.ended_by,
                kills=[
                    dec.ShutdownKill(
                        pod=k.pod,
                        at=k.at / SECOND,
                        grace_period_seconds=k.grace,
                        grace_from=k.grace_from,
                        priority_from=k.priority_from,
                    )
                    for k in g.kills
                ],
            )
            for g in plan.groups
        ],
        period_requested_seconds=requested,
        inhibit_delay_max_seconds=logind.effective,
        source=source,
        message=message,
        start_time_seconds=start_time_seconds,
    )


def shutdown_immediate(source: str, start_time_seconds: float) -> dec.NodeShutdownStarted:
    """ "No graceful configuration specified, node shutdown will be immediate"."""
    return dec.NodeShutdownStarted(
        graceful=False,
        groups=[],
        source=source,
        message="no graceful shutdown configured: the node stops at once, its pods are not stopped",
        start_time_seconds=start_time_seconds,
    )


def shutdown_unmanaged(
    source: str, start_time_seconds: float, requested: int, logind: InhibitDelay
) -> dec.NodeShutdownStarted:
    """The shutdown manager failed to start (kubelet: "Failed to start node shutdown
    manager"): logind does not wait, the node stops at once, its pods not stopped."""
    return dec.NodeShutdownStarted(
        graceful=False,
        groups=[],
        period_requested_seconds=requested,
        inhibit_delay_max_seconds=logind.effective,
        source=source,
        message=(
            f"Failed to start node shutdown manager: {logind.error}; the node stops at once, its pods are not stopped"
        ),
        start_time_seconds=start_time_seconds,
    )
