"""What follows from a pod's spec alone, worked out once per spec object.

A fleet's pods of one template on one node share one admitted spec
(``scenario/pod_shapes.py``), and specs are never changed in place once built, so a
value that depends on the spec alone (the images it runs, whether it sets local-storage
limits) is the same for all of them: it is worked out for the first and looked up by the
spec's identity for the rest. Values handed out are shared, so they are immutable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from ledgerlet_core.model.k8s.objects import PodSpec

T = TypeVar("T")

#: specs remembered per function at most (then its table starts again: an economy, not a rule)
KEPT: Final = 16_384


def per_spec(compute: Callable[[PodSpec], T]) -> Callable[[PodSpec], T]:
    """``compute``, remembered by the spec object it was given (held, so that its identity
    is never another's while remembered)."""
    table: dict[int, tuple[PodSpec, T]] = {}

    def remembered(spec: PodSpec) -> T:
        found = table.get(id(spec))
        if found is not None and found[0] is spec:
            return found[1]
        if len(table) >= KEPT:
            table.clear()
        value = compute(spec)
        table[id(spec)] = (spec, value)
        return value

    remembered.__doc__ = compute.__doc__
    return remembered
