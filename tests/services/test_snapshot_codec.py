"""Checkpoints keyed by what they hold (runtime/snapshot_codec.py): an edit to a docstring
or a comment keeps every snapshot; a change to a pickled class's module, or to the format,
throws away those that hold it, and only those."""

from __future__ import annotations

import logging
import os
import pickle
import sys
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

import pytest

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_core.cluster.view import ClusterView
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS
from ledgerlet_services.runtime.dedupe import RecentIds
from ledgerlet_services.runtime.snapshot_codec import (
    RunnerState,
    StaleSnapshot,
    capture,
    format_version,
    manifest,
    restore,
    source_digest,
)
from ledgerlet_services.runtime.snapshot_policy import Snapshots
from ledgerlet_store.snapshots import StoredSnapshot

THING = '''"""A module whose objects a service's state holds."""

from dataclasses import dataclass


@dataclass
class Thing:
    """Something a loop keeps."""

    a: int

    def twice(self) -> int:
        """Twice ``a``."""
        return 2 * self.a
'''


def test_docstrings_comments_and_layout_do_not_change_the_digest_fields_and_code_do() -> None:
    digest = source_digest(THING)
    assert source_digest(THING.replace("Something a loop keeps.", "What a loop keeps, said better.")) == digest
    assert source_digest(THING.replace('"""Twice ``a``."""', '"""``a``, twice over."""')) == digest
    assert source_digest(THING.replace('"""A module whose objects', '"""The module whose objects')) == digest
    assert source_digest(THING.replace("    a: int\n", "    a: int  # (a count)\n\n")) == digest
    assert source_digest(THING.replace("    a: int\n", "    a: int\n    b: int = 0\n")) != digest  # a field
    assert source_digest(THING.replace("    a: int\n", "    b: int\n")) != digest  # renamed
    assert source_digest(THING.replace("2 * self.a", "3 * self.a")) != digest  # what its code does
    assert source_digest(THING.replace('    """Something a loop keeps."""\n\n', "")) == digest  # (none at all)


def _write(path: Path, text: str) -> None:
    """``text`` in ``path``, seen as changed however quickly it follows the last write."""
    before = path.stat().st_mtime_ns if path.exists() else 0
    path.write_text(text)
    os.utime(path, ns=(before + 10**9, before + 10**9))


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, ModuleType]:
    """A module of the test's own, loaded, whose ``Thing`` a state holds."""
    name = f"snapshot_probe_{uuid.uuid4().hex[:8]}"
    path = tmp_path / f"{name}.py"
    _write(path, THING)
    monkeypatch.syspath_prepend(str(tmp_path))
    module = __import__(name)
    monkeypatch.setitem(sys.modules, name, module)
    return path, module


def _state(thing: object) -> RunnerState:
    return RunnerState(instances={"run": thing}, ended=OrderedDict(), seen=RecentIds(), last_root={})  # type: ignore[dict-item]


def test_a_docstring_edit_keeps_the_snapshot_and_a_field_change_does_not(probe: tuple[Path, ModuleType]) -> None:
    path, module = probe
    blob = capture(_state(module.Thing(7)), manifest())
    _write(path, THING.replace("Something a loop keeps.", "Something a loop keeps (edited)."))
    assert restore(blob).instances["run"].a == 7  # type: ignore[attr-defined]
    _write(path, THING.replace("    a: int\n", "    a: int\n    b: int = 0\n"))
    with pytest.raises(StaleSnapshot, match=f"{module.__name__} has changed"):
        restore(blob)


def test_a_change_to_a_module_the_snapshot_does_not_hold_keeps_it(
    probe: tuple[Path, ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, module = probe
    name = f"snapshot_probe_{uuid.uuid4().hex[:8]}"
    other = tmp_path / f"{name}.py"
    _write(other, THING)
    monkeypatch.setitem(sys.modules, name, __import__(name))
    blob = capture(_state(module.Thing(1)), manifest())
    _write(other, THING.replace("    a: int\n", "    z: str\n"))  # (no object of it in the state)
    assert restore(blob).instances["run"].a == 1  # type: ignore[attr-defined]


class _Holding:
    """A snapshot store that holds one checkpoint."""

    def __init__(self, blob: bytes, version: str) -> None:
        self.snap = StoredSnapshot("k", version, {("t", 0): 5}, blob, 5, datetime.now(UTC))

    async def save_snapshot(self, snap: StoredSnapshot) -> None:
        self.snap = snap

    async def load_snapshot(self, key: str) -> StoredSnapshot | None:
        return self.snap


async def test_a_service_folds_from_the_start_rather_than_load_a_snapshot_of_changed_code(
    probe: tuple[Path, ModuleType], caplog: pytest.LogCaptureFixture
) -> None:
    path, module = probe
    blob = capture(_state(module.Thing(3)), manifest())
    loaded = await Snapshots(_Holding(blob, format_version()), "k").load()
    assert loaded is not None and loaded[1] == {("t", 0): 5}
    caplog.set_level(logging.INFO)
    assert await Snapshots(_Holding(blob, "1/pickle5/py3.11"), "k").load() is None  # another format
    assert "taken by other code (format 1/pickle5/py3.11)" in caplog.text
    _write(path, THING.replace("2 * self.a", "self.a + self.a + 1"))
    assert await Snapshots(_Holding(blob, format_version()), "k").load() is None
    assert f"taken by other code ({module.__name__} has changed since the snapshot was taken)" in caplog.text


def test_the_shared_decoding_is_kept_by_reference_and_restored_as_the_runners() -> None:
    """A checkpoint holds no decoded objects of the process's: the restored loops decode
    through the restoring runner's shared decoding, and the codec's own module is not a
    module the checkpoint is keyed by."""
    taken, restoring = SharedDecoding(), SharedDecoding()
    loop = CONTROL_LOOPS[0](ClusterView(taken))
    blob = capture(_state(loop), manifest())
    restored = restore(blob, restoring).instances["run"]
    assert restored.cluster._shared is restoring  # (private: what the view decodes through)
    elsewhere = restore(blob).instances["run"]  # (no runner's: one of its own)
    assert isinstance(elsewhere.cluster._shared, SharedDecoding)
    assert elsewhere.cluster._shared not in (taken, restoring)
    with pytest.raises(TypeError, match="by reference"):
        pickle.dumps(taken)
