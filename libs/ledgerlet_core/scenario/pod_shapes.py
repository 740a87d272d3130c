"""A fleet's pods checked once per shape: those stamped from one template (a DaemonSet's,
a ReplicaSet's, a generated fleet's) differ in their names and nodes only.

A pod's spec (its node aside) and status are defaulted, validated and admitted the way
:func:`~ledgerlet_core.model.k8s.decode.decode_object` and
:func:`~ledgerlet_core.apiserver.admission.admit_pod` do one pod, once for each distinct
spec and status as the file writes them; each pod then takes its own metadata (decoded,
defaulted and checked pod by pod: names, namespaces, the exit-after annotation) and its
node. What is built is the very pod the one-at-a-time path builds (the tests hold the two
equal); anything out of the ordinary (not JSON, a static pod, a metadata error) goes that
path, which also words every error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from ledgerlet_core.model.codec import dec_hook
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.defaults import DEFAULT_NAMESPACE
from ledgerlet_core.model.k8s.intern import Interner
from ledgerlet_core.model.k8s.objects import ObjectMeta, Pod, PodSpec, PodStatus
from ledgerlet_core.model.k8s.priority import CONFIG_SOURCE_ANNOTATION
from ledgerlet_core.model.k8s.validation import validate_metadata


class _Head(msgspec.Struct, rename="camel"):
    kind: str = ""
    api_version: str = ""
    metadata: msgspec.Raw = msgspec.Raw(b"{}")
    spec: msgspec.Raw = msgspec.Raw(b"{}")
    status: msgspec.Raw = msgspec.Raw(b"{}")


class _Node(msgspec.Struct, rename="camel"):
    node_name: str = ""


_HEAD: Final = msgspec.json.Decoder(_Head)
_NODE: Final = msgspec.json.Decoder(_Node)
_META: Final = msgspec.json.Decoder(ObjectMeta, dec_hook=dec_hook, strict=False)


@dataclass(slots=True)
class _Shape:
    """One spec (its node left out) and status, as checked, and once admitted."""

    api_version: str
    spec: PodSpec
    status: PodStatus
    admitted: tuple[PodSpec, PodStatus] | None = None


class PodShapes:
    """The pods of a scenario's ``objects``, one shape at a time."""

    def __init__(self) -> None:
        self._shapes: dict[tuple[bytes, bytes, str], _Shape] = {}
        #: the shape each pod built here was made from (by the pod's identity)
        self._shape_of: dict[int, _Shape] = {}
        #: an admitted shape's spec on a node, by the shape's spec and the node: the pods
        #: of one shape on one node share it (a spec is never changed in place)
        self._on_node: dict[tuple[int, str], PodSpec] = {}

    def pod(self, raw: msgspec.Raw, reference: Callable[[], Any], uid: Callable[[str, str], str]) -> Pod | None:
        """The pod ``raw`` holds, decoded, defaulted and checked; None when it is no pod or
        must go the one-at-a-time path. ``reference``: that path for this entry (it decodes
        the shape's first pod, and says what is wrong with one); ``uid``: a pod's default
        uid by its namespace and name."""
        try:
            head = _HEAD.decode(raw)
        except msgspec.DecodeError:
            return None
        if head.kind != "Pod":
            return None
        try:
            meta = _META.decode(head.metadata)
            node = _NODE.decode(head.spec).node_name
        except (msgspec.DecodeError, msgspec.ValidationError):
            return None
        if CONFIG_SOURCE_ANNOTATION in meta.annotations:
            return None  # (a static pod keeps its manifest's priority: see _resolve_initial_pods)
        spec_raw = bytes(head.spec)
        if node:
            spec_raw = spec_raw.replace(b'"nodeName":' + msgspec.json.encode(node), b"", 1)
        key = (spec_raw, bytes(head.status), head.api_version)
        shape = self._shapes.get(key)
        if shape is None:
            first = reference()
            if not isinstance(first, Pod):
                return None
            shape = self._shapes[key] = _Shape(
                first.api_version, msgspec.structs.replace(first.spec, node_name=""), first.status
            )
        if not meta.namespace:
            meta.namespace = DEFAULT_NAMESPACE  # (a new object: nobody holds it yet)
        spec = msgspec.structs.replace(shape.spec, node_name=node) if node else shape.spec
        pod = Pod(api_version=shape.api_version, metadata=meta, spec=spec, status=shape.status)
        try:
            validate_metadata(pod)  # (its spec was, with the shape's first pod)
        except InputError:
            return None
        if not meta.uid:
            meta.uid = uid(meta.namespace, meta.name)
        self._shape_of[id(pod)] = shape
        return pod

    def admitted(self, pod: Pod, admit: Callable[[Pod], Pod], shared: Interner) -> Pod:
        """``pod`` as ``admit`` (admission, then its parts shared) leaves it: worked out
        for the first pod of its shape, given the rest (their metadata shared)."""
        shape = self._shape_of.get(id(pod))
        if shape is None:
            return admit(pod)
        if shape.admitted is None:
            first = admit(pod)
            shape.admitted = (msgspec.structs.replace(first.spec, node_name=""), first.status)
            return first
        spec, status = shape.admitted
        meta = pod.metadata
        # (equal parts shared, empty ones too: one empty map and list for a fleet's pods,
        # which nothing changes in place)
        meta.labels = shared.part(meta.labels)
        meta.annotations = shared.part(meta.annotations)
        meta.owner_references = shared.part(meta.owner_references)
        node = pod.spec.node_name
        if node:
            key = (id(spec), node)
            on_node = self._on_node.get(key)
            if on_node is None:
                on_node = self._on_node[key] = msgspec.structs.replace(spec, node_name=node)
            spec = on_node
        return Pod(api_version=pod.api_version, metadata=meta, spec=spec, status=status)
