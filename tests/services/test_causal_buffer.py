"""The causal buffer (runtime/causal_buffer.py) alone: no bus, no event loop. An event that
reaches a service before the step it descends from waits for it, and the offsets the
service may commit never pass an event it holds."""

from __future__ import annotations

from ledgerlet_bus.api import Record
from ledgerlet_core.contracts.envelope import Envelope, encode_envelope
from ledgerlet_core.contracts.internal import ClockTick
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_services.runtime.causal_buffer import CausalBuffer, Held, next_offsets, root_of

DECISIONS = "ledgerlet.decisions"
CLOCK = "ledgerlet.clock"


def _env(t: int, order: list[int], run: str = "r") -> Envelope:
    return make_envelope(ClockTick(round=len(order), phase=0), run=run, t=t, order=order, stream="s")


def _held(env: Envelope, offset: int, topic: str = DECISIONS, partition: int = 0) -> Held:
    return Held(env.sort_key(), env, Record(topic, partition, offset, None, encode_envelope(env)))


def _handle(buffer: CausalBuffer, fresh: list[Held], ended: set[str] | None = None) -> list[Envelope]:
    """What a runner does with a batch: each event released is handled in turn (a root step
    says so before the next is asked for)."""
    handled = []
    for item in buffer.release(fresh, ended or set()):
        if root_of(item.env) is None:
            buffer.root_handled(item.env.run, item.key)
        handled.append(item.env)
    buffer.read([h.record for h in fresh])
    return handled


def test_the_root_of_an_event_is_the_step_at_the_start_of_its_chain() -> None:
    assert root_of(_env(5, [1, 0])) is None and root_of(_env(5, [0])) is None
    assert root_of(_env(5, [1, 0, 30, 0])) == (5, (1, 0))
    assert root_of(_env(5, [1, 0, 30, 0, 12, 3])) == (5, (1, 0))


def test_an_event_waits_for_its_step_and_the_commit_stops_before_it() -> None:
    buffer = CausalBuffer()
    tick, derived = _env(5, [1, 0]), _env(5, [1, 0, 30, 0])
    early = _held(derived, 7)
    assert _handle(buffer, [early]) == [] and buffer.held == [early] and buffer
    assert buffer.committable([early.record]) == {(DECISIONS, 0): 7}  # it must come again after a crash
    step = _held(tick, 3, CLOCK)
    assert _handle(buffer, [step]) == [tick, derived] and not buffer
    assert buffer.committable([step.record]) == {(DECISIONS, 0): 8, (CLOCK, 0): 4}


def test_a_step_handled_in_a_batch_releases_what_descends_from_it_in_the_same_batch() -> None:
    buffer = CausalBuffer()
    tick, child, later = _env(5, [1, 0]), _env(5, [1, 0, 30, 0]), _env(5, [1, 1, 30, 0])
    got = _handle(buffer, [_held(later, 2), _held(child, 1), _held(tick, 0, CLOCK)])
    assert got == [tick, child]  # in causal order; ``later`` descends from step (1, 1), not yet handled
    assert [h.env for h in buffer.held] == [later]


def test_a_later_step_releases_what_an_earlier_one_left() -> None:
    """The steps are handled in order: once step (1, 1) is, everything of (1, 0) is too."""
    buffer = CausalBuffer()
    buffer.root_handled("r", (5, (1, 1)))
    assert _handle(buffer, [_held(_env(5, [1, 0, 30, 0]), 0)]) == [_env(5, [1, 0, 30, 0])]
    assert _handle(buffer, [_held(_env(6, [0, 0, 30, 0]), 1)]) == []  # (a later instant: held)


def test_runs_are_apart_and_an_ended_runs_stray_events_are_dropped() -> None:
    buffer = CausalBuffer()
    buffer.root_handled("a", (5, (1, 0)))
    mine, theirs = _env(5, [1, 0, 30, 0], run="a"), _env(5, [1, 0, 30, 0], run="b")
    assert _handle(buffer, [_held(mine, 0), _held(theirs, 1)]) == [mine]
    assert [h.env for h in buffer.held] == [theirs]  # run b's step has not come
    assert _handle(buffer, [], ended={"b"}) == [] and not buffer  # b ended (or was refused): no step will
    buffer.forget("a")  # a ended too: what comes of it now has no step handled
    assert _handle(buffer, [_held(_env(6, [1, 0, 30, 0], run="a"), 2)]) == [] and buffer


def test_a_batch_moves_its_run_on_to_its_last_member_never_back() -> None:
    buffer = CausalBuffer()
    buffer.batch_handled("r", (0, (0, 9)))
    assert buffer.last_root == {"r": (0, (0, 9))}
    buffer.batch_handled("r", (0, (0, 4)))  # (an earlier batch's copy)
    assert buffer.last_root == {"r": (0, (0, 9))}
    buffer.root_handled("r", (10, (1, 0)))
    assert buffer.last_root == {"r": (10, (1, 0))}


def test_only_the_partition_of_a_held_event_is_held_back() -> None:
    buffer = CausalBuffer()
    held = _held(_env(5, [1, 0, 30, 0]), 4, partition=1)
    done = [_held(_env(0, [0, i]), i, partition=0) for i in range(3)]
    assert _handle(buffer, [*done, held]) == [h.env for h in done]
    assert buffer.committable([]) == {(DECISIONS, 0): 3, (DECISIONS, 1): 4}
    assert next_offsets([h.record for h in [*done, held]]) == {(DECISIONS, 0): 3, (DECISIONS, 1): 5}
