"""The topics events travel on, and which one each event type takes (contracts/topics.md).

* ``ledgerlet.inputs``: the scenario's (or a recording's) inputs, one partition;
* ``ledgerlet.clock``: ticks of virtual time, one partition;
* ``ledgerlet.timers``: loops' requests for ticks, one partition (the driver reads it);
* ``ledgerlet.observations``: ``NodeObserved``, keyed by node, and a tick's derived
  observations together (``NodesObserved``), keyed by their first node;
* ``ledgerlet.decisions``: every decision, and the internal events loops tell each other
  (a created pod, a started pod, node status), keyed by node (or pod) so a node's stay in order.
"""

from __future__ import annotations

from typing import Final

INPUTS: Final = "ledgerlet.inputs"
CLOCK: Final = "ledgerlet.clock"
TIMERS: Final = "ledgerlet.timers"
OBSERVATIONS: Final = "ledgerlet.observations"
DECISIONS: Final = "ledgerlet.decisions"

ALL_TOPICS: Final = (INPUTS, CLOCK, TIMERS, OBSERVATIONS, DECISIONS)

#: event types that do not travel on the decisions topic (inputs are told apart by kind)
_BY_TYPE: Final = {
    "ClockTick": CLOCK,
    "TimerSet": TIMERS,
    "NodeObserved": OBSERVATIONS,
    "NodesObserved": OBSERVATIONS,
}


def topic_of(event_type: str, kind: str) -> str:
    """The topic an event of this type and kind travels on."""
    if kind == "input":
        return INPUTS
    return _BY_TYPE.get(event_type, DECISIONS)
