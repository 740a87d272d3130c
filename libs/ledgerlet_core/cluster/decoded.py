"""Objects decoded once per process, whichever loop asks first.

Every loop folds the same events; in the embedded run six loops share a process, and
each used to turn the same Pod or Node JSON into its model and resolve the same node's
kubelet configuration (the costliest steps of folding). Decoding is a pure function of
the event (and a configuration of its inputs), so its result can be shared: objects by
the id of the event that carried them (ids are unique per run), configurations by their
inputs. A run's objects are kept apart from other runs' (a run id may be used again, as
tests and replays do, so objects are shared only between loops that saw the same
``ScenarioStarted``: same run, same scenario digest). Decoded objects are immutable by
convention here (changes are made with
``msgspec.structs.replace``), so sharing them cannot leak one loop's state into another's.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, TypeVar, cast

import msgspec

from ledgerlet_core.apiserver.admission import apply_admitted
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.kubelet.config import KUBELET_CONFIG_ANNOTATION, KubeletConfig, config_for_node
from ledgerlet_core.model.codec import convert, dec_hook
from ledgerlet_core.model.k8s.intern import Interner
from ledgerlet_core.model.k8s.objects import Pod

T = TypeVar("T")

#: objects kept: enough for every loop of a process to meet the same event in a batch (at
#: most 256 members) and its admission; beyond that an object asked for again is decoded
#: again, the same value. Each service process of the distributed stack held 200,000 here,
#: the raw pods beside the admitted ones its view keeps: the largest part of its memory.
CAPACITY = 8192


#: the key under which an admitted pod is kept (apart from the objects events carry)
_ADMITTED = "admitted"


class Decoded:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self._capacity = capacity
        self._objects: OrderedDict[tuple[str, object], Any] = OrderedDict()
        self._seeded: dict[tuple[str, object], Any] = {}
        self._shared = Interner()
        self._configs: dict[tuple[str, str], KubeletConfig] = {}

    def object(self, event_id: str, raw: Mapping[str, Any] | msgspec.Raw, model: type[T]) -> T:
        """``raw`` (the object event ``event_id`` carries, as JSON or as plain data) as ``model``."""
        key = (event_id, model)
        found = self._seeded.get(key)
        if found is not None:
            return cast(T, found)
        found = self._objects.get(key)
        if found is None:
            found = _typed(raw, model)
            if isinstance(found, Pod):
                found = self._shared.pod(found)
            self._objects[key] = found
            if len(self._objects) > self._capacity:
                self._objects.popitem(last=False)
        return cast(T, found)

    def seed(self, event_id: str, obj: Any) -> None:
        """An object already built, by the id of the event that carries it: what the
        scenario loader made of its ``objects`` serves every loop of the process as it is
        (the same value the loops would decode from the event, one copy instead of two),
        given as each input is made. Kept until :meth:`unseed`."""
        self._seeded[(event_id, type(obj))] = obj

    def unseed(self) -> None:
        """Let go of the seeded objects (once the instant that carries them is over: a
        fleet's half a million keys and ids are not held for the run). An object asked
        for after this is decoded from its event: the same value."""
        self._seeded.clear()

    def admitted(self, event_id: str, raw: Pod, data: dec.PodAdmitted) -> Pod:
        """``raw`` as the admission ``event_id`` (a ``PodAdmitted``) left it: the same raw
        object in every loop (it was decoded here), so the result can be shared too."""
        key = (event_id, _ADMITTED)
        found = self._objects.get(key)
        if found is None:
            found = self._objects[key] = apply_admitted(raw, data)
            if len(self._objects) > self._capacity:
                self._objects.popitem(last=False)
        assert isinstance(found, Pod)
        return found

    def config(self, base: Mapping[str, Any], annotations: Mapping[str, str]) -> KubeletConfig:
        """A node's kubelet configuration: the scenario's with the node's annotation applied."""
        key = (json.dumps(base, sort_keys=True, default=str), annotations.get(KUBELET_CONFIG_ANNOTATION, ""))
        found = self._configs.get(key)
        if found is None:
            found = self._configs[key] = config_for_node(base, annotations)
        return found


#: a typed JSON decoder per model
_DECODERS: dict[type, msgspec.json.Decoder[Any]] = {}


def _typed(raw: Mapping[str, Any] | msgspec.Raw, model: type[T]) -> T:
    """JSON straight into the model (no dicts on the way), or plain data converted: the
    same value either way (msgspec's lax conversion, Quantity by :func:`dec_hook`)."""
    if isinstance(raw, msgspec.Raw):
        decoder = _DECODERS.get(model)
        if decoder is None:
            decoder = _DECODERS[model] = msgspec.json.Decoder(model, dec_hook=dec_hook, strict=False)
        return cast(T, decoder.decode(raw))
    return convert(raw, model)


class SharedDecoding:
    """One :class:`Decoded` per run (and scenario digest), for the loops of one process.

    The runtime makes one and hands it to the loops it runs (runtime/engine.py,
    runtime/shell.py): there is no process-wide instance. It is never pickled with a
    loop's state: a snapshot holds a reference to it, and the restoring runner's takes
    its place (runtime/snapshot_codec.py)."""

    def __init__(self, runs: int = 16) -> None:
        self._runs = runs
        self._by_run: OrderedDict[tuple[str, str], Decoded] = OrderedDict()

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("a SharedDecoding is its process's own: pickled by reference (runtime/snapshot_codec.py)")

    def forget(self, run: str, digest: str) -> None:
        """A run is over: what was decoded for it (its seeded objects too) goes."""
        self._by_run.pop((run, digest), None)

    def for_run(self, run: str, digest: str) -> Decoded:
        key = (run, digest)
        found = self._by_run.get(key)
        if found is None:
            found = self._by_run[key] = Decoded()
            if len(self._by_run) > self._runs:
                self._by_run.popitem(last=False)
        else:
            self._by_run.move_to_end(key)
        return found
