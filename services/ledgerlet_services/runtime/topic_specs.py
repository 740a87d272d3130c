"""How the contracts' topics are created on a broker (documented in contracts/topics.md)."""

from __future__ import annotations

from typing import Final

from ledgerlet_bus.api import TopicSpec
from ledgerlet_core.contracts.topics import ALL_TOPICS, CLOCK, DECISIONS, INPUTS, OBSERVATIONS, TIMERS

__all__ = [
    "ALL_TOPICS",
    "CLOCK",
    "DECISIONS",
    "DEFAULT_PARTITIONS",
    "INPUTS",
    "KEEP",
    "OBSERVATIONS",
    "TIMERS",
    "topic_specs",
]

#: Loops rebuild their state from what they have committed, so a run's records must
#: stay on the topics for as long as the run lasts: nothing is deleted by age.
KEEP: Final = (("retention.ms", "-1"),)
#: partitions of the keyed topics when they are created
DEFAULT_PARTITIONS: Final = 6


def topic_specs(partitions: int = DEFAULT_PARTITIONS) -> list[TopicSpec]:
    return [
        TopicSpec(INPUTS, 1, KEEP),
        TopicSpec(CLOCK, 1, KEEP),
        TopicSpec(TIMERS, 1, KEEP),
        TopicSpec(OBSERVATIONS, partitions, KEEP),
        TopicSpec(DECISIONS, partitions, KEEP),
    ]
