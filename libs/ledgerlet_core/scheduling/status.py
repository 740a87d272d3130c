"""A node's filter result (upstream's ``framework.Status``) and its codes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

UNSCHEDULABLE: Final = "Unschedulable"
#: preemption cannot help: the node is never a candidate
UNRESOLVABLE: Final = "UnschedulableAndUnresolvable"


@dataclass(frozen=True, slots=True)
class NodeStatus:
    """One node's filter result: ``code`` "" when it fits."""

    code: str = ""
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def fits(self) -> bool:
        return not self.code


FITS: Final = NodeStatus()

_STATUSES: dict[tuple[str, tuple[str, ...], str], NodeStatus] = {}


def interned(code: str, reasons: tuple[str, ...], plugin: str) -> NodeStatus:
    """One object per distinct status: nodes failing alike share it (a decision's lists and
    the FitError counts are made per object, not per node)."""
    key = (code, reasons, plugin)
    found = _STATUSES.get(key)
    if found is None:
        found = _STATUSES[key] = NodeStatus(code, reasons, plugin)
    return found
