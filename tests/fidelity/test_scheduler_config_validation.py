"""``schedulerConfig`` is validated as kube-scheduler validates its configuration
(``validation_pluginargs_test.go: TestValidateDefaultPreemptionArgs``, ``validation_test.go``)."""

from __future__ import annotations

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import load_scenario

BASE = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: s}
spec:
  duration: 1m
  schedulerConfig: %s
"""


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            "{minCandidateNodesPercentage: -1}",
            "spec: schedulerConfig.minCandidateNodesPercentage: Invalid value: -1: not in valid range [0, 100]",
        ),
        (
            "{minCandidateNodesPercentage: 900}",
            "spec: schedulerConfig.minCandidateNodesPercentage: Invalid value: 900: not in valid range [0, 100]",
        ),
        (
            "{minCandidateNodesAbsolute: -1}",
            "spec: schedulerConfig.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)",
        ),
        (
            "{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}",
            "spec: [schedulerConfig.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as "
            "minCandidateNodesAbsolute, schedulerConfig.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at "
            "the same time as minCandidateNodesPercentage]",
        ),
        (
            "{percentageOfNodesToScore: 101}",
            "spec: schedulerConfig.percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        ),
        (
            "{podInitialBackoffSeconds: 0}",
            "spec: schedulerConfig.podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        ),
        (
            "{podInitialBackoffSeconds: 5, podMaxBackoffSeconds: 2}",
            "spec: schedulerConfig.podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to "
            "PodInitialBackoffSeconds",
        ),
    ],
)
def test_settings_kube_scheduler_refuses_are_input_errors(config: str, expected: str) -> None:
    with pytest.raises(InputError) as err:
        load_scenario(BASE % config, "s.yaml")
    assert str(err.value) == f"s.yaml: {expected}"


@pytest.mark.parametrize(
    "config",
    ["{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 1}", "{minCandidateNodesPercentage: 100}", "{}"],
)
def test_settings_kube_scheduler_accepts_load(config: str) -> None:
    assert load_scenario(BASE % config, "s.yaml").scheduler_config is not None
