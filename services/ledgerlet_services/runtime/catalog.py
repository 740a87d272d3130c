"""Every service the product has, by the name ``ledgerlet service NAME`` and compose use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ledgerlet_core.contracts.order import ORDER_BY_NODE, ORDER_BY_STEP
from ledgerlet_core.loop.membership import Membership, group_of
from ledgerlet_services.loops.base import Loop
from ledgerlet_services.loops.controller_manager import ControllerManager
from ledgerlet_services.loops.kubelet import KubeletLoop
from ledgerlet_services.loops.out_of_service import OutOfServiceController
from ledgerlet_services.loops.scheduler import Scheduler
from ledgerlet_services.loops.shutdown_manager import ShutdownManager
from ledgerlet_services.loops.stats_collector import Collector
from ledgerlet_services.runtime.recorder import NAME as RECORDER
from ledgerlet_services.runtime.topic_specs import ALL_TOPICS

#: the control loops: consume, fold, decide, publish (the virtual clock waits for them)
CONTROL_LOOPS: Final[tuple[type[Loop], ...]] = (
    Collector,
    KubeletLoop,
    ShutdownManager,
    Scheduler,
    ControllerManager,
    OutOfServiceController,
)

#: the decision audit API: reads the store only (``ledgerlet serve`` as a service)
AUDIT_API: Final = "audit-api"

#: services that are not control loops
OTHER_SERVICES: Final[tuple[str, ...]] = (RECORDER, AUDIT_API)


def needs_bus(name: str) -> bool:
    return name != AUDIT_API


def service_names() -> list[str]:
    return [s.name for s in CONTROL_LOOPS] + list(OTHER_SERVICES)


def control_loop(name: str) -> type[Loop] | None:
    return next((s for s in CONTROL_LOOPS if s.name == name), None)


def loop_groups(members: Mapping[str, int] | None = None) -> Mapping[str, Sequence[str]]:
    """Consumer groups the clock waits for, with the topics each one reads; a service
    split between ``members[name]`` members has a group per member."""
    out: dict[str, Sequence[str]] = {}
    for s in CONTROL_LOOPS:
        n = (members or {}).get(s.name, 1)
        for i in range(n):
            out[group_of(s.name, Membership(i, n))] = list(s.topics)
    return out


def parse_members(text: str) -> dict[str, int]:
    """``NAME=N[,NAME=N]``: how many members each split service runs as (``ledgerlet
    drive --members``); ValueError naming what is wrong."""
    out: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",") if p.strip()):
        name, sep, count = part.partition("=")
        kind = control_loop(name)
        if not sep or not count.isdigit() or int(count) < 1:
            raise ValueError(f"--members: expected NAME=N, got {part!r}")
        if kind is None or not kind.splittable:
            splittable = ", ".join(s.name for s in CONTROL_LOOPS if s.splittable)
            raise ValueError(f"--members: {name!r} cannot be split between members (can: {splittable})")
        if name in out:
            raise ValueError(f"--members: {name!r} given twice")
        out[name] = int(count)
    return out


def order_scheme_for(members: Mapping[str, int] | None, asked: str = ORDER_BY_STEP) -> str:
    """How a run with ``members`` must be ordered: by node when a node-scoped loop is split
    (its members could not otherwise give their events the ids one loop would), else as
    ``asked`` (contracts/order.py)."""
    loops = [control_loop(name) for name, n in (members or {}).items() if n > 1]
    return ORDER_BY_NODE if any(kind is not None and kind.node_scoped for kind in loops) else asked


def recorder_groups() -> Mapping[str, Sequence[str]]:
    return {RECORDER: list(ALL_TOPICS)}
