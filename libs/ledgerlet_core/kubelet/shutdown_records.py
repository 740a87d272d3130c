"""The graceful shutdown's plan as its ``NodeShutdownStarted`` record."""

from __future__ import annotations

from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.kubelet.graceful_shutdown import Plan
from ledgerlet_core.model.duration import SECOND

SHUTDOWN_DETECTED = "Shutdown manager detected shutdown event"


def shutdown_started(
    plan: Plan, *, requested: int, logind: int, source: str, start_time_seconds: float
) -> dec.NodeShutdownStarted:
    """``requested``: the seconds the groups ask for; ``logind``: InhibitDelayMaxSec as configured.
    The kubelet raises logind's delay to what it needs with a drop-in, and says so."""
    message = SHUTDOWN_DETECTED
    if requested > logind:
        message += (
            f"; logind InhibitDelayMaxSec raised from {logind}s to {requested}s by the kubelet's "
            "drop-in /etc/systemd/logind.conf.d/99-kubelet.conf"
        )
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
        inhibit_delay_max_seconds=max(logind, requested),
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
