"""One object for equal parts of many pods.

A fleet's pods differ in name and node but mostly repeat the same containers, labels,
tolerations and status; held once each, 550,000 pods take a fraction of the memory.
Models are never changed in place once built (changes go through
``msgspec.structs.replace``), so a part can be shared by every pod that has it. Parts
are compared by their JSON, so only equal values are ever shared.
"""

from __future__ import annotations

from typing import Any, Final, TypeVar

import msgspec

from ledgerlet_core.model.codec import enc_hook
from ledgerlet_core.model.k8s.objects import Pod

T = TypeVar("T")

_KEY: Final = msgspec.json.Encoder(enc_hook=enc_hook)

#: distinct parts kept at most (then the table starts again: sharing is an economy, not a rule)
KEPT: Final = 65_536


class Interner:
    """Equal parts, one object each (per run: a table of what it has met)."""

    def __init__(self) -> None:
        self._parts: dict[tuple[type, bytes], Any] = {}

    def part(self, value: T) -> T:
        key = (type(value), _KEY.encode(value))
        found = self._parts.get(key)
        if found is None:
            if len(self._parts) >= KEPT:
                self._parts.clear()
            found = self._parts[key] = value
        return found

    def pod(self, pod: Pod) -> Pod:
        """``pod`` with its repeated parts shared. It must be new (nobody holds it yet):
        its parts are replaced in place, which costs a fraction of a copy."""
        meta, spec = pod.metadata, pod.spec
        if meta.labels:
            meta.labels = self.part(meta.labels)
        if meta.annotations:
            meta.annotations = self.part(meta.annotations)
        if meta.owner_references:
            meta.owner_references = self.part(meta.owner_references)
        spec.containers = self.part(spec.containers)
        if spec.init_containers:
            spec.init_containers = self.part(spec.init_containers)
        if spec.tolerations:
            spec.tolerations = self.part(spec.tolerations)
        if spec.node_selector:
            spec.node_selector = self.part(spec.node_selector)
        # what the scheduler's plugins and the unmodelled-fields scan read, per distinct spec
        if spec.affinity is not None:
            spec.affinity = self.part(spec.affinity)
        if spec.topology_spread_constraints:
            spec.topology_spread_constraints = self.part(spec.topology_spread_constraints)
        if spec.volumes:
            spec.volumes = self.part(spec.volumes)
        if spec.resource_claims:
            spec.resource_claims = self.part(spec.resource_claims)
        if spec.readiness_gates:
            spec.readiness_gates = self.part(spec.readiness_gates)
        pod.status = self.part(pod.status)
        return pod
