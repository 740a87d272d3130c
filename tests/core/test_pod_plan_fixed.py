"""A pod's plan: what it uses at an instant (worked out once for a pod whose usage never
changes, the fleet's common case) and its stats as JSON, made only when an observation
carries them; a stopped container or a changing series is worked out at the instant."""

from __future__ import annotations

import msgspec
import pytest

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.usage import parse_pod_usage
from ledgerlet_core.node_sim.stats import _pod_stats, plan_pod, pod_stats_at, pod_stats_json, pod_use
from tests.core.helpers import pod

CONSTANT = {"memory": "300Mi", "rootfs": "20Mi", "logs": "5Mi", "pids": 12, "inodes": 900, "volumes": "1Gi"}


@pytest.mark.parametrize("t", [0, 7 * SECOND, 3600 * SECOND])
def test_constant_pod_use_is_that_of_any_instant(t: int) -> None:
    plan = plan_pod(pod("web", volumes=[{"name": "cache", "emptyDir": {}}]), parse_pod_usage(CONSTANT, "u"))
    assert plan.fixed is not None
    computed = _pod_stats(plan, t)
    assert pod_use(plan, t) is plan.fixed  # reused, not worked out again
    assert pod_use(plan, t) == computed[1:] == (300 << 20, 20 << 20, 5 << 20, 1 << 30, 900, 12)
    assert pod_stats_json(plan, t) == msgspec.json.encode(computed[0])


def test_pods_of_one_template_share_their_plan_but_for_their_name() -> None:
    """(Pods whose parts are the same objects, as the loader interns a fleet's.)"""
    usage = parse_pod_usage(CONSTANT, "u")
    a = pod("a")
    b = msgspec.structs.replace(a, metadata=msgspec.structs.replace(a.metadata, name="b"))
    first, second = plan_pod(a, usage), plan_pod(b, usage)
    assert (first.ref.name, second.ref.name) == ("a", "b")
    assert first.containers is second.containers and first.fixed is second.fixed


def test_a_stopped_container_is_worked_out_at_the_instant() -> None:
    plan = plan_pod(pod("web"), parse_pod_usage(CONSTANT, "u"))
    stats, memory, *_ = pod_stats_at(plan, 0, frozenset({"web"}))
    assert memory == 0  # an OOM-killed container holds no memory until it restarts
    assert stats.memory is not None and stats.memory.working_set_bytes == 0
    assert pod_use(plan, 0, frozenset({"web"}))[0] == 0


def test_a_changing_series_is_never_fixed() -> None:
    usage = {**CONSTANT, "memory": [[0, "100Mi"], [100, "300Mi"]]}
    plan = plan_pod(pod("web"), parse_pod_usage(usage, "u"))
    assert plan.fixed is None
    assert pod_stats_at(plan, 50 * SECOND)[1] == pod_use(plan, 50 * SECOND)[0] == 200 << 20
    assert pod_stats_at(plan, 100 * SECOND)[1] == 300 << 20


@pytest.mark.parametrize(
    ("extra", "volumes"),
    [
        ({}, []),
        ({"volumes": {"cache": [[0, "1Mi"], [60, "9Mi"]], "scratch": "2Mi"}}, [{"name": "cache", "emptyDir": {}}]),
        ({"containers": {"web": {"memory": [[0, "10Mi"], [60, "90Mi"]]}, "side": {"logs": "3Mi"}}}, []),
    ],
)
def test_varying_stats_are_what_encoding_them_gives(extra: dict[str, object], volumes: list[dict[str, object]]) -> None:
    usage = {**CONSTANT, "logs": [[0, "0"], [60, "5Gi"]], **extra}
    plan = plan_pod(pod("web", volumes=volumes), parse_pod_usage(usage, "u"))
    for t in (0, 1, 7 * SECOND, 59 * SECOND, 3600 * SECOND):
        for stopped in (frozenset(), frozenset({"web"})):
            stats, *whole = _pod_stats(plan, t, stopped)
            assert pod_stats_json(plan, t, stopped) == msgspec.json.encode(stats)
            assert pod_use(plan, t, stopped) == tuple(whole)
