"""The kernel's OOM killer and exact crossing times."""

from __future__ import annotations

from ledgerlet_core.model.usage import Series, parse_series
from ledgerlet_core.node_sim.oom import (
    ContainerRun,
    NodeMemory,
    OOMCandidate,
    first_crossing,
    pick_victim,
    restart_delay,
)

S = 10**9
Mi = 1 << 20
Gi = 1 << 30


def test_crossing_is_found_to_the_nanosecond() -> None:
    s = parse_series([[0, "0"], [100, "100Mi"]], "x")  # 1Mi a second
    hit = first_crossing([s], 50 * Mi, 0, 100 * S)
    assert hit is not None and s.at(hit) > 50 * Mi and s.at(hit - 1) <= 50 * Mi
    assert 50 * S < hit < 50 * S + 1000  # integer interpolation reaches 50Mi + 1 byte 954 ns later
    assert first_crossing([s], 200 * Mi, 0, 100 * S) is None
    both = first_crossing([s, Series.constant(60 * Mi)], 100 * Mi, 0, 100 * S)
    assert both is not None and 40 * S < both < 40 * S + 1000


def test_already_over_is_a_state_unless_inclusive() -> None:
    c = Series.constant(2 * Gi)
    assert first_crossing([c], Gi, 10 * S, 20 * S) is None
    assert first_crossing([c], Gi, 10 * S, 20 * S, inclusive=True) == 10 * S


def test_oom_score_picks_best_effort_first() -> None:
    cands = [
        OOMCandidate("a", "g", 3 * Gi, -997),
        OOMCandidate("b", "be", 1 * Gi, 1000),
        OOMCandidate("c", "bu", 2 * Gi, 500),
    ]
    assert pick_victim(cands, 8 * Gi).pod == "b"
    assert pick_victim([OOMCandidate("a", "x", 0, 1000)], 8 * Gi) is None


def test_back_off() -> None:
    assert [restart_delay(n) // S for n in (1, 2, 3, 4, 5, 6, 7, 8)] == [1, 10, 20, 40, 80, 160, 300, 300]


def mem(system: str = "1Gi", capacity: int = 8 * Gi) -> NodeMemory:
    return NodeMemory(capacity, parse_series(system, "s"), None)


def test_container_over_its_limit_is_killed_and_restarts_with_back_off() -> None:
    m = mem()
    m.add(
        ContainerRun(
            "ns/p",
            "app",
            parse_series([[0, "100Mi"], [100, "1100Mi"]], "m"),
            limit=Gi,
            oom_score_adj=900,
            restart_policy="Always",
        )
    )
    at = m.next_oom(0, 200 * S)
    assert at is not None and 92 * S < at < 93 * S  # 100Mi + 10Mi/s crosses 1Gi at 92.4s
    [kill] = m.act(at)
    assert (kill.scope, kill.restarts, kill.restart_at, kill.pod_failed) == ("limit", 1, at + S, False)
    assert m.stopped(at) == {"ns/p": {"app"}}
    assert m.next_oom(at, 200 * S, inclusive=False) == at + S  # the restart
    [again] = m.act(at + S)  # still over its limit when it comes back: killed again
    assert again.restarts == 2 and again.restart_at == at + 11 * S


def test_never_restarting_pod_fails() -> None:
    m = mem()
    m.add(ContainerRun("ns/p", "app", Series.constant(2 * Gi), limit=Gi, oom_score_adj=900, restart_policy="Never"))
    [kill] = m.act(0)
    assert kill.pod_failed and kill.restart_at is None and m.next_oom(0, 100 * S, inclusive=False) is None


def test_node_oom_kills_by_score_until_memory_fits() -> None:
    m = mem(system="1Gi")
    m.add(ContainerRun("ns/g", "g", Series.constant(3 * Gi), None, -997, "Always"))
    m.add(ContainerRun("ns/b", "b", parse_series([[0, "1Gi"], [10, "5Gi"]], "m"), None, 999, "Always"))
    m.add(ContainerRun("ns/be", "be", Series.constant(512 * Mi), None, 1000, "Always"))
    at = m.next_oom(0, 20 * S)
    assert at is not None and 6 * S < at < 7 * S  # 1 + 3 + 0.5 + (1 + 0.4 t) > 8Gi after 6.25 s
    kills = m.act(at)
    assert [(k.pod, k.scope) for k in kills] == [("ns/b", "node")]  # 999 + a big share beats 1000 + small share
    assert kills[0].oom_score > 1000


def test_system_memory_alone_over_capacity_kills_nothing_and_does_not_loop() -> None:
    m = mem(system="9Gi")
    m.add(ContainerRun("ns/p", "p", Series.constant(0), None, 1000, "Always"))
    assert m.act(0) == []
    assert m.next_oom(0, 100 * S, inclusive=False) is None
