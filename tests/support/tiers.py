"""The quick tier's share of a repetitive test: ``make check`` runs some of its cases,
``make test`` (and ``pytest -m slow``) the rest too, so a property keeps its whole seed
count, a parametrized test every case, and every behaviour a case in the tier a developer
runs every few minutes."""

from __future__ import annotations

from collections.abc import Container, Iterable
from typing import Any

import pytest

_SLOW = pytest.mark.slow


def seeds(count: int, quick: int) -> list[Any]:
    """``range(count)`` as parameters, all but the first ``quick`` of them marked ``slow``."""
    return [pytest.param(seed, marks=() if seed < quick else _SLOW) for seed in range(count)]


def slow_unless(cases: Iterable[Any], quick: Container[Any]) -> list[Any]:
    """``cases`` (single values) as parameters, each not in ``quick`` marked ``slow``;
    their ids are the values' own, as without the marks."""
    return [pytest.param(case, marks=() if case in quick else _SLOW) for case in cases]
