"""Topics, partitions and keys (documented for operators in contracts/topics.md).

* ``ledgerlet.inputs``: the scenario's (or a recording's) inputs, one partition, so
  every service sees them in file order.
* ``ledgerlet.clock``: ticks of virtual time, one partition.
* ``ledgerlet.timers``: services' requests for ticks, one partition (the driver reads it).
* ``ledgerlet.observations``: NodeObserved, keyed by node.
* ``ledgerlet.decisions``: every decision, keyed by node (or by pod when no node), so a
  node's decisions stay in order.
"""

from __future__ import annotations

from typing import Final

from ledgerlet_bus.api import TopicSpec

INPUTS: Final = "ledgerlet.inputs"
CLOCK: Final = "ledgerlet.clock"
TIMERS: Final = "ledgerlet.timers"
OBSERVATIONS: Final = "ledgerlet.observations"
DECISIONS: Final = "ledgerlet.decisions"

ALL_TOPICS: Final = (INPUTS, CLOCK, TIMERS, OBSERVATIONS, DECISIONS)


#: Services rebuild their state from what they have committed, so a run's records must
#: stay on the topics for as long as the run lasts: nothing is deleted by age.
KEEP: Final = (("retention.ms", "-1"),)


def topic_specs(partitions: int = 6) -> list[TopicSpec]:
    return [
        TopicSpec(INPUTS, 1, KEEP),
        TopicSpec(CLOCK, 1, KEEP),
        TopicSpec(TIMERS, 1, KEEP),
        TopicSpec(OBSERVATIONS, partitions, KEEP),
        TopicSpec(DECISIONS, partitions, KEEP),
    ]
