"""Every frozen decision log is reproduced byte for byte (ids, causes and all).

A restructure must not move a single decision; a fix that does regenerates the file it
changes (``make golden``) and names the bug in its commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .cases import cases, golden_path
from .replay_case import decision_log


def _first_difference(want: bytes, got: bytes) -> str:
    a, b = want.splitlines(), got.splitlines()
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return f"record {i + 1} differs:\n  golden: {x[:400]!r}\n  now:    {y[:400]!r}"
    return f"golden has {len(a)} records, now {len(b)}"


@pytest.mark.parametrize("name", sorted(cases()))
async def test_decision_log_is_unchanged(name: str, tmp_path: Path) -> None:
    path = golden_path(name)
    assert path.exists(), f"no golden log for {name}: run `make golden`"
    want = path.read_bytes()
    got = await decision_log(name, tmp_path)
    assert got == want, _first_difference(want, got)


def test_every_case_decides_something() -> None:
    """A golden file that holds nothing would freeze nothing."""
    for name in cases():
        lines = golden_path(name).read_bytes().splitlines()
        assert lines, name
        assert all(json.loads(line)["seq"] == i for i, line in enumerate(lines, start=1)), name
