"""Every service the product has, by the name ``ledgerlet service NAME`` and compose use."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ledgerlet_services.base import Service
from ledgerlet_services.collector import Collector
from ledgerlet_services.controller_manager import ControllerManager
from ledgerlet_services.eviction_manager import EvictionManager
from ledgerlet_services.out_of_service import OutOfServiceController
from ledgerlet_services.recorder import NAME as RECORDER
from ledgerlet_services.scheduler import Scheduler
from ledgerlet_services.shutdown_manager import ShutdownManager
from ledgerlet_services.topics import ALL_TOPICS

#: the control loops: consume, fold, decide, publish (the virtual clock waits for them)
CONTROL_LOOPS: Final[tuple[type[Service], ...]] = (
    Collector,
    EvictionManager,
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


def control_loop(name: str) -> type[Service] | None:
    return next((s for s in CONTROL_LOOPS if s.name == name), None)


def loop_groups() -> Mapping[str, Sequence[str]]:
    """Consumer groups the clock waits for, with the topics each one reads."""
    return {s.name: list(s.topics) for s in CONTROL_LOOPS}


def recorder_groups() -> Mapping[str, Sequence[str]]:
    return {RECORDER: list(ALL_TOPICS)}
