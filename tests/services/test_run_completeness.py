"""A distributed run is complete only with every pod its scenario creates admitted or
refused (runtime/run_completeness.py): what ``drive`` checks before it calls a run
completed, held here to every frozen decision log so that the check never fails a run
that decided as the embedded default does."""

from __future__ import annotations

import json
from functools import cache

import pytest

from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_services.runtime.run_completeness import pods_to_admit, unadmitted, unadmitted_reason
from tests.golden.cases import cases, golden_path


@cache
def _scenario(name: str) -> Scenario:
    text, source = cases()[name]()
    return load_scenario(text, source)


def _decided(name: str) -> list[tuple[str, str | None]]:
    """(type, pod) of each decision of the case's frozen log."""
    return [(r["type"], r.get("pod")) for r in map(json.loads, golden_path(name).read_bytes().splitlines())]


@pytest.mark.parametrize("name", sorted(cases()))
def test_every_frozen_run_answers_every_pod_its_scenario_creates(name: str) -> None:
    assert unadmitted(_decided(name), pods_to_admit(_scenario(name))) == []


def test_the_pods_a_scenario_creates_are_its_applied_pods_not_its_starting_ones() -> None:
    # non-preempting-job: two pods run from the start; "report" and "typo" are applied
    # (typo's PriorityClass does not exist: refused); the Job's pod is its controller's
    assert pods_to_admit(_scenario("non-preempting-job")) == ["default/report", "default/typo"]
    decided = _decided("non-preempting-job")
    assert ("PodAdmitted", "default/report") in decided and ("PodRejected", "default/typo") in decided


SCENARIO = """
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: applies}
spec:
  duration: 1m
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}}}
    - {apiVersion: v1, kind: Pod, metadata: {name: a}, spec: {nodeName: n1, containers: [{name: c}]}}
  events:
    - at: 5s
      apply:
        apiVersion: v1
        kind: Pod
        metadata: {name: a, labels: {x: "1"}}
        spec: {nodeName: n1, containers: [{name: c}]}
    - at: 5s
      apply: {apiVersion: v1, kind: Pod, metadata: {name: b, namespace: team}, spec: {containers: [{name: c}]}}
    - at: 9s
      apply:
        apiVersion: v1
        kind: Pod
        metadata: {name: b, namespace: team, labels: {x: "2"}}
        spec: {containers: [{name: c}]}
    - {at: 20s, apply: {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: high}, value: 1000}}
    - {at: 2m, apply: {apiVersion: v1, kind: Pod, metadata: {name: late}, spec: {containers: [{name: c}]}}}
"""


def test_an_update_needs_no_answer_a_pod_applied_twice_one_and_one_after_the_end_none() -> None:
    assert pods_to_admit(load_scenario(SCENARIO, "applies.yaml")) == ["team/b"]


def test_a_run_that_admitted_nothing_is_short_of_every_pod_and_says_so() -> None:
    # pod-overhead-kata-fc applies six pods (two refused: no such RuntimeClass, an overhead given)
    wanted = pods_to_admit(_scenario("pod-overhead-kata-fc"))
    assert len(wanted) == 6
    answered = [d for d in _decided("pod-overhead-kata-fc") if d[0] not in ("PodAdmitted", "PodRejected")]
    missing = unadmitted(answered, wanted)
    assert missing == wanted
    said = unadmitted_reason("r1", missing, len(wanted))
    assert said.startswith("run r1: 6 of the 6 pods the scenario creates were never admitted or refused")
    assert f"({', '.join(wanted[:3])} and 3 more)" in said and "is the scheduler service" in said


def test_one_pod_left_unanswered_is_named() -> None:
    wanted = pods_to_admit(_scenario("pod-overhead-kata-fc"))
    answers = {pod: kind for kind, pod in _decided("pod-overhead-kata-fc") if kind in ("PodAdmitted", "PodRejected")}
    assert set(answers) >= set(wanted) and {answers[p] for p in wanted} == {"PodAdmitted", "PodRejected"}
    for pod in wanted:  # an admission or a refusal alike answers it
        decided = [d for d in _decided("pod-overhead-kata-fc") if d[1] != pod]
        assert unadmitted(decided, wanted) == [pod]
