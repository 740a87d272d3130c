"""``spec.schedulerConfig``: KubeSchedulerConfiguration names where they exist (the
DefaultPreemption args, the queue's backoff) and ``percentageOfNodesToScore``."""

from __future__ import annotations

import msgspec


class SchedulerConfig(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    disable_preemption: bool = False
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100
    feature_gates: dict[str, bool] = {}
