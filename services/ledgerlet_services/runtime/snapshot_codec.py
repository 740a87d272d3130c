"""A service's state as a checkpoint's bytes, and back, keyed by what was pickled.

The state is pickled, so its shape is the code's: a checkpoint says which code it was taken
by, and one taken by other code is not loaded (the service folds its group's history from
the start instead, as it would without snapshots). "Other code" is told apart by what the
pickle holds, not by every file of the project:

* the format (:data:`STATE_FORMAT`, the pickle protocol, the Python version): the stored
  snapshot's ``version``, looked at before anything is read;
* the modules of the pickled classes: each of ledgerlet's own by a digest of its source
  with docstrings, comments and layout left out (:func:`source_digest`: an edit to a
  docstring keeps every snapshot, a field added to a class does not); a third party's by
  its distribution's version; the standard library's by the Python version above.

A checkpoint carries a digest for every module loaded when it was taken (its manifest), and
is read with an unpickler that checks, for each class it meets, its module's digest against
the code loaded now (:class:`StaleSnapshot` at the first that differs). Modules whose classes
it does not hold may change as they like.

The decoding the loops share (:class:`~ledgerlet_core.cluster.decoded.SharedDecoding`) is
the process's, not the state's: it is pickled as a reference, and the restoring runner's
takes its place.
"""

from __future__ import annotations

import ast
import copyreg
import hashlib
import importlib.metadata
import io
import json
import os
import pickle
import struct
import sys
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import cramjam

from ledgerlet_core.cluster.decoded import SharedDecoding
from ledgerlet_services.loops.base import Loop
from ledgerlet_services.runtime.dedupe import RecentIds

#: bump when the bytes a checkpoint is made of change (the frame below, the compression)
STATE_FORMAT: Final = 2
PICKLE_PROTOCOL: Final = 5
#: a checkpoint's first bytes, then the manifest's length and the manifest (JSON)
_MAGIC: Final = b"LLSNAP2\n"
_LENGTH: Final = struct.Struct(">I")

#: modules whose source is the project's own: digested (the rest by their distribution)
OWN: Final = ("ledgerlet_",)


@dataclass(slots=True)
class RunnerState:
    """What a service runner holds that folding its committed records rebuilds."""

    instances: dict[str, Loop]
    ended: OrderedDict[str, None]
    seen: RecentIds
    last_root: dict[str, tuple[int, tuple[int, ...]]]


class StaleSnapshot(Exception):
    """The checkpoint holds objects of code that has changed since it was taken."""


def format_version() -> str:
    """What every checkpoint this code can read has in common (the stored ``version``)."""
    return f"{STATE_FORMAT}/pickle{PICKLE_PROTOCOL}/py{sys.version_info[0]}.{sys.version_info[1]}"


def source_digest(source: str) -> str:
    """A digest of Python source that docstrings, comments and layout do not change (the
    syntax tree without docstrings, line numbers or columns)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and _docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256(ast.dump(tree, annotate_fields=False, include_attributes=False).encode()).hexdigest()[:32]


def _docstring(node: ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    first = node.body[0] if node.body else None
    return isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)


#: (path, mtime, size) -> digest: the same file is read once
_DIGESTS: dict[tuple[str, int, int], str] = {}


def module_digest(name: str) -> str | None:
    """What a module's classes are pickled as: its source's digest (the project's own, or
    a module of no distribution), its distribution's version (a third party's), "" (the
    standard library: the Python version says); None if it is not loaded."""
    top = name.partition(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        return ""
    module = sys.modules.get(name)
    if module is None:
        return None
    if not top.startswith(OWN):
        dist = _distributions().get(top)
        if dist:
            return f"{dist[0]}=={importlib.metadata.version(dist[0])}"
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        return ""
    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
        found = _DIGESTS.get(key)
        if found is None:
            with open(path, encoding="utf-8") as f:
                found = _DIGESTS[key] = source_digest(f.read())
    except (OSError, SyntaxError, ValueError):
        return None  # (unreadable: never taken for the same code)
    return found


@cache
def _distributions() -> Mapping[str, list[str]]:
    return importlib.metadata.packages_distributions()


def manifest_key(name: str) -> str:
    """A module's entry in a manifest: the project's own (and a module of no distribution)
    by its name, a third party's by its distribution's top-level package (one version)."""
    top = name.partition(".")[0]
    return name if top.startswith(OWN) or top not in _distributions() else top


def manifest() -> dict[str, str]:
    """Every loaded module's digest but the standard library's: what a checkpoint taken
    now may hold (taken in the service, before the child that pickles is forked)."""
    out: dict[str, str] = {}
    for name in list(sys.modules):
        key = manifest_key(name)
        if key not in out:
            digest = module_digest(name)
            if digest:
                out[key] = digest
    return out


def capture(state: RunnerState, modules: Mapping[str, str]) -> bytes:
    """The state as a checkpoint: the manifest ``modules`` (:func:`manifest`), then the
    state pickled and compressed (a fleet's state is mostly repetition)."""
    head = json.dumps(modules, sort_keys=True, separators=(",", ":")).encode()
    pickled = io.BytesIO()
    pickler = pickle.Pickler(pickled, protocol=PICKLE_PROTOCOL)
    pickler.dispatch_table = _DISPATCH
    pickler.dump(state)
    body = cramjam.zstd.compress(pickled.getbuffer(), level=1)
    return b"".join([_MAGIC, _LENGTH.pack(len(head)), head, bytes(body)])


def restore(blob: bytes, decoding: SharedDecoding | None = None) -> RunnerState:
    """The state a checkpoint holds; :class:`StaleSnapshot` if a class it holds is of a
    module that has changed since (or that is not loaded, or not in its manifest).
    ``decoding``: what the restored loops decode through (the restoring runner's; else
    one of their own)."""
    if not blob.startswith(_MAGIC):
        raise StaleSnapshot("not a checkpoint of this format")
    start = len(_MAGIC) + _LENGTH.size
    (length,) = _LENGTH.unpack_from(blob, len(_MAGIC))
    modules = json.loads(blob[start : start + length])
    data = bytes(cramjam.zstd.decompress(blob[start + length :]))
    state = _CheckingUnpickler(io.BytesIO(data), modules, decoding or SharedDecoding()).load()
    if not isinstance(state, RunnerState):
        raise TypeError(f"a snapshot holds {type(state).__name__}, not RunnerState")
    return state


def restoring_decoding() -> SharedDecoding:
    """What a checkpoint's shared decoding is pickled as a call of: the restoring runner's
    (:class:`_CheckingUnpickler`); read by plain pickle, a new one."""
    return SharedDecoding()


def _by_reference(_: SharedDecoding) -> tuple[Any, tuple[()]]:
    return restoring_decoding, ()


#: how a checkpoint's objects are reduced: as pickle does, but the shared decoding by
#: reference (:func:`restoring_decoding`); by type, so the other objects of a fleet's
#: state cost nothing more (no per-object hook)
_DISPATCH: Final = {**copyreg.dispatch_table, SharedDecoding: _by_reference}


class _CheckingUnpickler(pickle.Unpickler):
    """Looks every class up as pickle does, once its module is the one pickled; the
    shared decoding is ``decoding``."""

    def __init__(self, file: io.BytesIO, modules: Mapping[str, str], decoding: SharedDecoding) -> None:
        super().__init__(file)
        self._modules = modules
        self._checked: set[str] = set()
        self._decoding = decoding

    def _restoring_decoding(self) -> SharedDecoding:
        return self._decoding

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == (__name__, restoring_decoding.__name__):
            return self._restoring_decoding  # (the codec's own: no digest of it in the key)
        if module not in self._checked:
            now = module_digest(module)
            if now is None:
                try:
                    __import__(module)  # (as pickle would: a module of the state not loaded yet)
                except ImportError:
                    raise StaleSnapshot(f"{module} is gone since the snapshot was taken") from None
                now = module_digest(module)
            if now is None or (now and self._modules.get(manifest_key(module)) != now):
                raise StaleSnapshot(f"{module} has changed since the snapshot was taken")
            self._checked.add(module)
        return super().find_class(module, name)
