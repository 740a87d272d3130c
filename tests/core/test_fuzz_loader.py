"""The scenario loader under fuzzing: mutations of every example (slices cut, doubled or
moved, hostile tokens spliced in) and hostile texts. Whatever the text, the loader
returns a scenario or raises an InputError naming the file; nothing else escapes it,
and it answers quickly. Some accepted mutants are run, too: what the loader accepts,
a run can process."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgerlet_core.model.duration import SECOND
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.conftest import EXAMPLES

TEXTS = {p.name: p.read_text() for p in sorted(EXAMPLES.glob("*.yaml"))}

#: tokens that have broken loaders: YAML tags, aliases, special floats, huge numbers,
#: deep brackets, control bytes, odd unicode
HOSTILE = [
    "&a",
    "*a",
    "*nope",
    "!!python/object/apply:os.system ['true']",
    "!!binary aGVsbG8=",
    ".nan",
    ".inf",
    "-.inf",
    "1e9999",
    "1e308",
    "-1",
    "9223372036854775808",
    "0x7fffffffffffffff",
    "[" * 50,
    "{" * 50,
    "\x00",
    "\ufeff",
    "\u202e",
    "null",
    "~",
    "''",
    "- - - - -",
    "? complex key",
    "<<: *a",
    "%YAML 1.1",
    "---",
    "...",
    "2026-13-45T99:99:99Z",
    "1Ei",
    "1e-9999",
    "NaN",
    "\t",
]


@st.composite
def mutants(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(sorted(TEXTS.values())))
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        a = draw(st.integers(0, n))
        b = draw(st.integers(a, min(n, a + 200)))
        op = draw(st.sampled_from(["cut", "double", "splice", "replace-token"]))
        if op == "cut":
            text = text[:a] + text[b:]
        elif op == "double":
            text = text[:b] + text[a:b] + text[b:]
        elif op == "splice":
            text = text[:a] + draw(st.sampled_from(HOSTILE)) + text[a:]
        else:
            text = text[:a] + draw(st.sampled_from(HOSTILE) | st.text(max_size=20)) + text[b:]
    return text


def _loads_or_refuses(text: str) -> Scenario | None:
    try:
        return load_scenario(text, "fuzzed.yaml")
    except InputError as exc:
        assert str(exc).startswith("fuzzed.yaml"), exc  # noqa: PT017 (the file is named)
        return None


@pytest.mark.slow
@given(text=mutants())
@settings(max_examples=400, deadline=2000, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_mutated_examples_load_or_are_refused(text: str) -> None:
    _loads_or_refuses(text)


@given(text=st.text(max_size=300) | st.binary(max_size=300).map(lambda b: b.decode("latin-1")))
@settings(max_examples=300, deadline=2000, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
def test_arbitrary_text_loads_or_is_refused(text: str) -> None:
    _loads_or_refuses(text)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(12))
def test_accepted_mutants_run(seed: int, tmp_path: Path) -> None:
    """A mutant the loader accepts (searched for deterministically from the seed) runs to
    its end: no value it let through fails the run."""
    import random

    rnd = random.Random(seed)
    for _ in range(200):
        name = rnd.choice(sorted(TEXTS))
        lines = TEXTS[name].splitlines(keepends=True)
        i = rnd.randrange(len(lines))
        lines[i] = lines[i].replace(rnd.choice(["1", "2", "5", "0"]), rnd.choice(["9", "0", "100", "3"]), 1)
        scenario = _loads_or_refuses("".join(lines))
        if scenario is not None and scenario.duration <= 4 * 3600 * SECOND:
            break
    else:
        pytest.skip("no accepted mutant found")

    async def run() -> None:
        async with await open_store(f"sqlite:///{tmp_path / 'events.db'}") as store:
            await run_embedded(scenario, store, run=f"fuzz-{seed}")

    asyncio.run(run())
