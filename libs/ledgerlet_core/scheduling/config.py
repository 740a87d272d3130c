"""``spec.schedulerConfig``: KubeSchedulerConfiguration names where they exist (the
DefaultPreemption args, the queue's backoff) and ``percentageOfNodesToScore``, validated
as kube-scheduler validates its configuration."""

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


#: the names a scenario writes
SCHEDULER_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(SchedulerConfig))
#: the feature gates ledgerlet's scheduler reads: none yet, so every real gate set in
#: ``featureGates`` is accepted with a warning (and a name no component knows refused)
SCHEDULER_GATES: frozenset[str] = frozenset()


def config_errors(c: SchedulerConfig) -> list[tuple[str, str]]:
    """(field, message) for every setting kube-scheduler would refuse, in upstream's words
    (``apis/config/validation/validation.go: ValidateKubeSchedulerConfiguration``,
    ``validation_pluginargs.go: ValidateDefaultPreemptionArgs``)."""
    errors: list[tuple[str, str]] = []

    def invalid(field: str, value: int, why: str) -> None:
        errors.append((field, f"Invalid value: {value}: {why}"))

    if not 0 <= c.percentage_of_nodes_to_score <= 100:
        invalid("percentageOfNodesToScore", c.percentage_of_nodes_to_score, "not in valid range [0-100]")
    if c.pod_initial_backoff_seconds <= 0:
        invalid("podInitialBackoffSeconds", c.pod_initial_backoff_seconds, "must be greater than 0")
    if c.pod_max_backoff_seconds < c.pod_initial_backoff_seconds:
        invalid(
            "podMaxBackoffSeconds",
            c.pod_max_backoff_seconds,
            "must be greater than or equal to PodInitialBackoffSeconds",
        )
    pct, absolute = c.min_candidate_nodes_percentage, c.min_candidate_nodes_absolute
    if not 0 <= pct <= 100:
        invalid("minCandidateNodesPercentage", pct, "not in valid range [0, 100]")
    if absolute < 0:
        invalid("minCandidateNodesAbsolute", absolute, "not in valid range [0, inf)")
    if pct == 0 and absolute == 0:
        invalid("minCandidateNodesPercentage", pct, "cannot be zero at the same time as minCandidateNodesAbsolute")
        invalid("minCandidateNodesAbsolute", absolute, "cannot be zero at the same time as minCandidateNodesPercentage")
    return errors
