"""Every number that goes into an event's ``order`` (and so into its id), in one table.

An input's order is ``[INPUTS, index]``, a clock tick's ``[CLOCK, round]``, the end of a
run ``[END]``; an event a loop emits while handling another is the handled event's order
plus ``[the loop's rank, n]`` (n counts what the loop emitted for that event), and a
request for a clock tick is ``[step, rank, TIMER_REQUESTS + phase, at]``. Ids are derived
from the order, so these numbers are fixed forever: a changed rank would give every past
decision a new id. The table is checked for clashes when it is imported.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

#: the roots of an instant's causal tree
INPUTS: Final = 0
CLOCK: Final = 1
END: Final = 2

#: after ``[END]``: the run's outcome, stored once all else is (``[END, RUN_COMPLETED_AT]``)
RUN_COMPLETED_AT: Final = 1
RUN_FAILED_AT: Final = 2

#: a control loop's place among loops, by its service name
LOOP_RANKS: Final = MappingProxyType(
    {
        "stats-collector": 10,
        "eviction-manager": 20,
        "shutdown-manager": 22,
        "scheduler": 25,
        "controller-manager": 30,
        "out-of-service-controller": 35,
    }
)

#: timer requests sort after everything a loop emitted in the step
TIMER_REQUESTS: Final = 1_000_000

#: ``ScenarioStarted.orderScheme``: how a node-scoped loop (the kubelet's: the eviction
#: manager) numbers what it emits while handling an event. By the step (``""``, every run
#: recorded before runs could be ordered by node): ``[rank, n]``, n counting everything the loop emitted for that event;
#: by the node: ``[rank, node's place, n]``, n counting only what concerns that node, the
#: node's place being where it first appeared (``NodeEntry.order``). The second lets
#: members that each own some nodes give every event the id one loop alone would, and
#: the loop's timer requests are then asked once per step, not once until they fire, so
#: that each member can ask for its own nodes' and the requests still have one id each.
ORDER_BY_STEP: Final = ""
ORDER_BY_NODE: Final = "node"
ORDER_SCHEMES: Final = (ORDER_BY_STEP, ORDER_BY_NODE)


def rank_of(loop: str) -> int:
    try:
        return LOOP_RANKS[loop]
    except KeyError:
        raise KeyError(f"no rank for loop {loop!r}: add it to contracts/order.py (ranks are forever)") from None


def _check() -> None:
    ranks = list(LOOP_RANKS.values())
    if len(set(ranks)) != len(ranks):
        raise AssertionError(f"two loops share a rank: {dict(LOOP_RANKS)}")
    roots = {INPUTS, CLOCK, END}
    if len(roots) != 3 or roots & set(ranks):
        raise AssertionError("root orders and loop ranks must be distinct")
    if max(ranks) >= TIMER_REQUESTS:
        raise AssertionError("loop ranks must stay below the timer requests' base")


_check()
