"""rapidyaml reads large YAML exactly as PyYAML does, or leaves it to PyYAML.

Compared against PyYAML on every example, test and golden scenario, the recordings,
a corpus of YAML constructs and generated documents: whenever the fast path answers,
the documents are PyYAML's (same values, same types, same key order); where it cannot
be sure it answers ``None``, and ``read_documents`` falls back (the same errors, the
same bounds)."""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario import fast_yaml
from ledgerlet_core.scenario.documents import KubernetesLoader, UniqueKeyLoader, read_documents
from ledgerlet_core.scenario.load import load_scenario
from tests.conftest import EXAMPLES, ROOT

pytestmark = pytest.mark.skipif(not fast_yaml.available(), reason="the rapidyaml wheel is not installed")

LOADERS = [UniqueKeyLoader, KubernetesLoader]
FILES = sorted(
    [
        *EXAMPLES.glob("*.yaml"),
        *(ROOT / "tests" / "data").rglob("*.yaml"),
        *(ROOT / "tests" / "golden" / "scenarios").glob("*.yaml"),
        *(ROOT / "deploy").rglob("*.yaml"),
        ROOT / "compose.yaml",
    ]
)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down and mappings in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def pyyaml(text: str, loader: type[Any]) -> list[Any]:
    return [d for d in yaml.load_all(text, Loader=loader) if d is not None]


def agrees(text: str, loader: type[Any]) -> bool:
    """The fast path's answer, checked against PyYAML; True when it answered."""
    fast = fast_yaml.read_fast(text, loader)
    if fast is None:
        return False
    try:
        reference = pyyaml(text, loader)
    except yaml.YAMLError as exc:
        pytest.fail(f"PyYAML refuses {text!r} ({exc}), the fast path read {fast!r}")
    assert same(fast, reference), f"{text!r}: fast {fast!r} != PyYAML {reference!r}"
    return True


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_example_and_test_file_reads_as_pyyaml_reads_it(path: Path) -> None:
    text = path.read_text()
    fast = [agrees(text, loader) for loader in LOADERS]
    # only unquoted timestamps (a datetime to PyYAML, text to JSON), aliases and tags fall back
    kubernetes_only = path.name == "kubectl-get-nodes-pods.yaml"
    slow = path.name in ("compose.yaml", "compose.override.yaml")  # (aliases; compose's own !override tags)
    assert fast == [not kubernetes_only and not slow, not slow]


#: constructs, each read by the fast path exactly as PyYAML reads it
PROVEN = [
    # YAML 1.1 scalars that JSON spells the same way
    "a: 1\nb: -7\nd: 0\ne: 1.5\nf: -0.25\ng: 1.0e+5\nh: 12345678901234567890\ni: 1.\n",
    "t: true\nf: false\nn: null\ne:\ns: text\n",
    "[1, 2.5, true, null, abc, 8Gi, 100Mi, 10%, 500m, k8s.io/name, 'registry.local/app:v1']",
    "b: 08\nc: 0o17\nd: 1e\n",  # strings to YAML 1.1 (and kept as strings here)
    # quoted scalars
    "a: 'it''s'\nb: \"tab\\there \\\"q\\\" \\u00e9 \\U0001F600 \\x41 \\\\\"\nc: ''\nd: \"\"\ne: '8'\nf: \"yes\"\n",
    "a: 'one\n  two\n\n  three'\nb: \"x\n  y\"\n",
    'a: "\\N \\_ \\L \\P \\/ \\t \\n \\r"\n',
    # block scalars, every chomping and an indentation indicator
    "a: |\n  one\n   two\n\n  three\n\nb: 1\n",
    "a: |-\n  x\n\n\nb: |+\n  y\n\n\nc: >\n  folded\n  line\n\n  para\n    more\n  back\nd: >-\n  z\n",
    "a: |2\n    indented\n  b\ne: >+\n  keep\n\n",
    "- |\n  in a list\n- >-\n  folded\n",
    # collections, flow and block, nested, empty, comments
    "a: {b: [1, {c: d}], e: []}\nf: {}\n# comment\ng:\n- - x\n  - y\n- {h: i}  # trailing\n",
    "{apiVersion: v1, kind: List, items: [{metadata: {name: a, labels: {x: y}}}, {metadata: {name: b}}]}",
    "[a: b, c]\n",
    "a:\n  - 1\n  -\n  - 3\n",
    # multi-document streams
    "a: 1\n---\nb: 2\n",
    "---\n- x\n---\n---\n- y\n",
    "# lead\n---\na: 1\n",
    # unicode, anchors without aliases
    "ключ: значение\n日本: 語\nemoji: 😀\nnbsp: \u00a0x\n",
    "a: &anchor {b: 1}\n",
]

#: constructs the fast path leaves to PyYAML
UNPROVEN = [
    "a: yes\n",  # YAML 1.1 booleans JSON would keep as text
    "a: 0x1F\n",
    "a: +3\n",  # JSON has no plus sign
    "a: 1e5\n",  # a string to YAML 1.1, a number to JSON
    "a: 1_\n",
    'a: "\\e \\0 \\a \\b \\v \\f"\n',  # control characters: rapidyaml's JSON leaves them raw
    "a: 1_000\n",
    "a: 1:30\n",
    "a: ~\n",
    "a: .inf\n",
    "a: inf\n",
    "a: 2024-01-01\n",  # a date to UniqueKeyLoader (text to KubernetesLoader: proven there)
    "1: a\n",  # a key that is not a string
    "x: &d {a: 1}\ny: *d\n",
    "x: &d {a: 1}\ny:\n  <<: *d\n",
    "a: !!str 1\n",
    "a: 1\na: 2\n",
    "a: 'x'\nb:\n  c: 1\n  c: 2\n",
    "%YAML 1.1\n---\na: 1\n",
    "a:\tb\n",
    "a: b\r\nc: d\r\n",
    "a: \x07\n",
    "a: b\u2028c\n",
    "a: 1\n...\n",
    "{\n---\n}\n",
    "'long\n  key': 1\n",
    "[?",
    "- | -\n",
    "- '' -\n",
    "a: ]x\n",
    "[a:]\n",
    "[[],0,:1]\n",
    '"\\\n\n"\n',
    "--- |-\n{nf\n",
    "{l\n: }\n",
    "? explicit\n: value\n",  # a line opening with a colon
    "- >4>\n",
    "a: &\n",
    "a: &x.y 1\n",
    "[" * 60 + "]" * 60,
]


@pytest.mark.parametrize("text", PROVEN)
def test_constructs_read_as_pyyaml_reads_them(text: str) -> None:
    for loader in LOADERS:
        assert agrees(text, loader), f"{text!r} fell back under {loader.__name__}"


@pytest.mark.parametrize("text", UNPROVEN)
def test_constructs_not_proven_are_left_to_pyyaml(text: str) -> None:
    assert fast_yaml.read_fast(text, UniqueKeyLoader) is None


def test_timestamps_stay_text_for_the_kubernetes_loader_only() -> None:
    text = "creationTimestamp: 2024-01-01T00:00:00Z\nday: 2024-01-01\n"
    assert fast_yaml.read_fast(text, UniqueKeyLoader) is None
    assert fast_yaml.read_fast(text, KubernetesLoader) == pyyaml(text, KubernetesLoader)


def test_without_the_wheel_pyyaml_reads_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """(rapidyaml is imported on first use only: a command that reads no large YAML never
    pays for the import)"""
    text = (EXAMPLES / "memory-pressure.yaml").read_text()
    monkeypatch.setattr(fast_yaml, "_rapidyaml", lambda: None)
    monkeypatch.setattr(fast_yaml, "FAST_MIN_CHARS", 0)
    assert fast_yaml.read_fast(text, UniqueKeyLoader) is None
    assert read_documents(text, "m.yaml") == pyyaml(text, UniqueKeyLoader)


def fleet_text(nodes: int, flow: bool) -> str:
    sys.path.insert(0, str(ROOT / "bench"))
    from fleet import fleet  # type: ignore[import-not-found]

    return yaml.dump(fleet(nodes, 110), Dumper=yaml.CSafeDumper, default_flow_style=flow, width=1 << 30)


@pytest.mark.slow
@pytest.mark.parametrize("flow", [True, False], ids=["flow-style", "block-style"])
def test_a_large_fleet_takes_the_fast_path_and_reads_as_pyyaml_reads_it(
    flow: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = fleet_text(60, flow)  # 6,600 pods, over a megabyte
    assert len(text) >= fast_yaml.FAST_MIN_CHARS
    answered: list[bool] = []
    read_fast = fast_yaml.read_fast

    def spy(text: str, loader: type[Any]) -> list[Any] | None:
        docs = read_fast(text, loader)
        answered.append(docs is not None)
        return docs

    monkeypatch.setattr(fast_yaml, "read_fast", spy)
    docs = read_documents(text, "fleet.yaml")
    assert answered == [True]
    assert same(docs, pyyaml(text, UniqueKeyLoader))


def hostile_cases() -> list[str]:
    head = "apiVersion: ledgerlet/v1\nkind: Scenario\nmetadata: {name: hostile}\n"
    bomb = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    bomb += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    return [
        head + "spec:\n  " + "\n  ".join(bomb) + "\n  duration: *a8\n",
        head + "spec: &s\n  duration: 1m\n  loop: *s\n",
        head + "spec:\n" + "".join(" " * i + "- \n" for i in range(1, 1200)),
        head + "spec: {duration: " + "[" * 5000 + "]" * 5000 + "}\n",
        head + "spec:\n  duration: 1m\n  duration: 2h\n",
        head + "spec:\n  duration: 1m\n  objects: {}\n",
        head + "spec:\n  duration: [1m\n",
        head + "spec:\n  duration: .nan\n",
        head + "x: &d {duration: 1m}\nspec:\n  <<: *d\n",
        head + "spec:\n  duration: 1m\n  - x\n",
    ]


@pytest.mark.parametrize("text", hostile_cases())
def test_hostile_input_ends_as_it_did(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the fast path taken for every size, each outcome (the same scenario, or the
    same InputError naming the same file, object and field) is PyYAML's own."""

    def outcome() -> str:
        try:
            return repr(load_scenario(text, "hostile.yaml"))
        except InputError as exc:
            return f"InputError {exc}"

    monkeypatch.setattr(fast_yaml, "FAST_MIN_CHARS", 1 << 62)
    before = outcome()
    monkeypatch.setattr(fast_yaml, "FAST_MIN_CHARS", 0)
    assert outcome() == before


SCALARS = [
    "a", "b c", "yes", "No", "on", "OFF", "y", "true", "False", "null", "~", "", " ", " lead", "trail ",
    "1", "-1", "+1", "01", "0x1F", "0o17", "017", "08", "1_000", "1:30", "1.5", "1.", ".5", "-.5", "1e5",
    "1.0e+5", ".inf", "-.Inf", ".NaN", "inf", "nan", "2024-01-01", "2024-01-01T10:00:00Z", "<<", "=",
    "a: b", "a #b", "#x", "- x", "? x", "x:", ":x", "[x]", "{x}", "a, b", "'q'", '"dq"', "back\\slash",
    "tab\tthere", "nl\nline", "two\n\nbreaks", "trailing\n", "\nleading", "é", "日本", "😀", "\x85nel",
    "\u2028ls", "\ufeffbom", "word " * 20, "&a", "*a", "!t", "|", ">", "%", "@x", "`x", "---", "...",
    "8Gi", "10%", 123, -7, 1.25, True, False, None, 10**20, 1e300,
]  # fmt: skip
documents = st.recursive(
    st.sampled_from(SCALARS),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(SCALARS[:60]), inner, max_size=4),
    max_leaves=12,
)
EDITS = ["", " ", "\n", ":", "-", "#", "'", '"', "[", "]", "{", "}", ",", "? ", "&x ", "*x", "!!str ", "|", ">",
         " - ", ": ", "...", "\n---\n", "\n- ", "\n  k: ", "|-\n", "\\", "\t", "\r\n", "[?", "| x"]  # fmt: skip


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(
    docs=st.lists(documents, min_size=1, max_size=3),
    style=st.sampled_from([True, False, None]),
    quote=st.sampled_from([None, None, None, "'", '"', "|", ">"]),
    width=st.sampled_from([20, 80, 1 << 30]),
    seed=st.integers(0, 1 << 30),
    edits=st.integers(0, 3),
)
def test_generated_documents_read_as_pyyaml_reads_them_or_fall_back(
    docs: list[Any], style: bool | None, quote: str | None, width: int, seed: int, edits: int
) -> None:
    """Documents dumped in every style, then damaged a little: whenever the fast path
    answers, PyYAML reads the text (it never takes what libyaml refuses) and agrees."""
    text = yaml.dump_all(docs, Dumper=yaml.SafeDumper, default_flow_style=style, default_style=quote, width=width)
    rng = random.Random(seed)
    for _ in range(edits):
        a = rng.randint(0, len(text))
        b = rng.randint(a, min(len(text), a + 5))
        text = text[:a] + rng.choice(EDITS) + text[b:]
    for loader in LOADERS:
        agrees(text, loader)


def test_a_fast_read_leaves_no_cycle_behind() -> None:
    """Reading pauses the cyclic collector (scenario/load.py), so whatever the fast read
    leaves in a cycle stays until the end of the read: its walk once kept the whole
    rapidyaml tree alive that way (a 1,000-node fleet peaked at 1.1 GiB, not 690 MiB)."""
    import gc

    text = "a:\n  b: [1, {c: d}]\n  e:\n  - f: g\n" + "# padding\n" * 20
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        docs = fast_yaml.read_fast(text, UniqueKeyLoader)
        left_in_cycles = gc.collect()
    finally:
        if was_enabled:
            gc.enable()
    assert docs == pyyaml(text, UniqueKeyLoader)
    assert left_in_cycles == 0
