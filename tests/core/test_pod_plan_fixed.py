"""A pod whose usage never changes has its stats worked out once (the fleet's hot path):
they must be what a pass would compute at any instant, and a pod with a stopped
container or a changing series must still be computed at the instant."""

from __future__ import annotations

import msgspec
import pytest

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.usage import parse_pod_usage
from ledgerlet_core.node_sim.stats import _pod_stats, plan_pod, pod_stats_at
from tests.core.helpers import pod

CONSTANT = {"memory": "300Mi", "rootfs": "20Mi", "logs": "5Mi", "pids": 12, "inodes": 900, "volumes": "1Gi"}


def _encoded(stats: object) -> bytes:
    return msgspec.json.encode(stats)


@pytest.mark.parametrize("t", [0, 7 * SECOND, 3600 * SECOND])
def test_constant_pod_stats_are_those_of_any_instant(t: int) -> None:
    plan = plan_pod(pod("web", volumes=[{"name": "cache", "emptyDir": {}}]), parse_pod_usage(CONSTANT, "u"))
    from ledgerlet_core.node_sim.stats import pod_stats_json

    assert plan.fixed is not None and plan.fixed_json is not None
    use, js = pod_stats_json(plan, t)
    computed = _pod_stats(plan, t)
    assert js is plan.fixed_json and use is plan.fixed  # reused, not rebuilt
    assert use == computed[1:]
    assert js == _encoded(computed[0])
    assert use == (300 << 20, 20 << 20, 5 << 20, 1 << 30, 900, 12)


def test_a_stopped_container_is_worked_out_at_the_instant() -> None:
    plan = plan_pod(pod("web"), parse_pod_usage(CONSTANT, "u"))
    stats, memory, *_ = pod_stats_at(plan, 0, frozenset({"web"}))
    assert memory == 0  # an OOM-killed container holds no memory until it restarts
    assert stats.memory is not None and stats.memory.working_set_bytes == 0


def test_a_changing_series_is_never_fixed() -> None:
    usage = {**CONSTANT, "memory": [[0, "100Mi"], [100, "300Mi"]]}
    plan = plan_pod(pod("web"), parse_pod_usage(usage, "u"))
    assert plan.fixed is None
    assert pod_stats_at(plan, 50 * SECOND)[1] == 200 << 20
    assert pod_stats_at(plan, 100 * SECOND)[1] == 300 << 20


@pytest.mark.parametrize(
    ("extra", "volumes"),
    [
        ({}, []),
        ({"volumes": {"cache": [[0, "1Mi"], [60, "9Mi"]], "scratch": "2Mi"}}, [{"name": "cache", "emptyDir": {}}]),
        ({"containers": {"web": {"memory": [[0, "10Mi"], [60, "90Mi"]]}, "side": {"logs": "3Mi"}}}, []),
    ],
)
def test_varying_stats_joined_from_pieces_are_what_encoding_them_gives(
    extra: dict[str, object], volumes: list[dict[str, object]]
) -> None:
    """A pod whose stats vary has them joined from pieces around the instant's numbers:
    byte for byte what encoding the stats gives, at every instant and with a container
    stopped (then they are encoded as they are)."""
    from ledgerlet_core.node_sim.stats import pod_stats_json

    usage = {**CONSTANT, "logs": [[0, "0"], [60, "5Gi"]], **extra}
    plan = plan_pod(pod("web", volumes=volumes), parse_pod_usage(usage, "u"))
    assert plan.fixed is None and plan.pieces is not None
    for t in (0, 1, 7 * SECOND, 59 * SECOND, 3600 * SECOND):
        for stopped in (frozenset(), frozenset({"web"})):
            use, js = pod_stats_json(plan, t, stopped)
            stats, *whole = _pod_stats(plan, t, stopped)
            assert js == _encoded(stats) and tuple(whole) == use
