"""The quick tier's share of a repetitive test: ``make check`` runs the first cases, ``make
test`` (and ``pytest -m slow``) the rest too, so a property keeps its whole seed count and
every behaviour keeps a case in the tier a developer runs every few minutes."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pytest


def seeds(count: int, quick: int) -> list[Any]:
    """``range(count)`` as parameters, all but the first ``quick`` of them marked ``slow``."""
    return [pytest.param(seed, marks=() if seed < quick else pytest.mark.slow) for seed in range(count)]


def first_quick(cases: Iterable[Any], quick: int = 1) -> list[Any]:
    """``cases`` as parameters, all but the first ``quick`` of them marked ``slow`` (a case
    that already is a ``pytest.param`` keeps its id and marks)."""
    out: list[Any] = []
    for i, case in enumerate(cases):
        param = case if isinstance(case, type(pytest.param(None))) else pytest.param(*_values(case))
        if i >= quick:
            param = pytest.param(*param.values, marks=(*param.marks, pytest.mark.slow), id=param.id)
        out.append(param)
    return out


def _values(case: Any) -> tuple[Any, ...]:
    return case if isinstance(case, tuple) else (case,)
