"""The columns metrics-server's table gives ``kubectl get nodemetrics|podmetrics``
(metrics-server ``pkg/api``: name, CPU, memory, window)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ledgerlet_core.model.quantity import Quantity, parse_quantity
from ledgerlet_services.audit.kube_api.meta import Instant


def _col(name: str, doc: str) -> dict[str, Any]:
    return {"name": name, "type": "string", "format": "", "description": doc, "priority": 0}


_COLUMNS: Final = [
    {"name": "Name", "type": "string", "format": "name", "description": "Name of the resource", "priority": 0},
    _col("CPU", "CPU consumption (not modelled by ledgerlet)"),
    _col("Memory", "Memory consumption: the working set"),
    _col("Window", "Interval the usage was collected over"),
]
COLUMNS: Final[dict[str, list[dict[str, Any]]]] = {"NodeMetrics": _COLUMNS, "PodMetrics": _COLUMNS}


def _sum(values: list[str]) -> str:
    total: Quantity | None = None
    for v in values:
        q = parse_quantity(v)
        total = q if total is None else total + q
    return str(total) if total is not None else "0"


def _cells(obj: Mapping[str, Any], instant: Instant) -> list[Any]:
    if "usage" in obj:
        usage: Mapping[str, Any] = obj["usage"]
        cpu, memory = usage.get("cpu", "0"), usage.get("memory", "0")
    else:
        containers = obj.get("containers") or []
        cpu = _sum([c.get("usage", {}).get("cpu", "0") for c in containers])
        memory = _sum([c.get("usage", {}).get("memory", "0") for c in containers])
    return [obj.get("metadata", {}).get("name", ""), cpu, memory, obj.get("window", "")]


CELLS: Final[dict[str, Callable[[Mapping[str, Any], Instant], list[Any]]]] = {
    "NodeMetrics": _cells,
    "PodMetrics": _cells,
}
