"""Internal events: the clock, timers and observations that services pass each other.

They are stored like everything else, because a decision's inputs include them: the
observation an eviction was decided on is the ``NodeObserved`` it cites as a cause.
"""

from __future__ import annotations

import msgspec

from ledgerlet_core.eviction.reclaim import RuntimeView
from ledgerlet_core.summary import Summary


class _Data(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class ClockTick(_Data, kw_only=True):
    """Virtual time has reached the envelope's ``t``.

    At one instant the clock ticks in phases: 0 fires ordinary timers (pods exiting),
    1 is housekeeping (observations and eviction passes); ``round`` counts the ticks
    at that instant.
    """

    round: int = 0
    phase: int = 0


class TimerSet(_Data, kw_only=True):
    """A service asks the clock to tick at ``at`` (ns) so it can act then."""

    at: int
    owner: str
    purpose: str = ""
    phase: int = 0


class NodeObserved(_Data, kw_only=True):
    """One observation of a node, i.e. one housekeeping pass of its eviction manager.

    ``source`` is ``usage`` (derived, closed loop) or ``stats`` (a recorded Summary);
    ``runtime`` is the container runtime's image list and dead containers (closed loop).
    """

    node: str
    summary: Summary
    source: str
    after_reclaim: Summary | None = None
    runtime: RuntimeView | None = None


class PodStarted(_Data, kw_only=True):
    """The kubelet admitted a pod that arrived at its node and started it.

    Pods in the scenario's ``objects`` are running from the start and need none.
    """

    node: str
    pod: str
    uid: str = ""


INTERNAL_TYPES: dict[str, type[_Data]] = {
    "ClockTick": ClockTick,
    "TimerSet": TimerSet,
    "NodeObserved": NodeObserved,
    "PodStarted": PodStarted,
}
