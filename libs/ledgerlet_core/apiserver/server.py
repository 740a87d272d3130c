"""The API server as the one authority on what exists: the objects admission reads
(PriorityClasses, RuntimeClasses, ResourceQuotas and what each quota has charged) and
the admission of every pod and class created after the start.

Upstream: ``pkg/registry/scheduling/priorityclass`` (validation, then the Priority
plugin's one-default rule), the pod admission chain (:func:`.admission.admit_pod`) and
``plugin/pkg/admission/resourcequota`` (checked at create, charged while the pod holds
resources, released when it is gone). A refused object never exists: only this module
decides, and the other loops learn the outcome from ``PodAdmitted``, ``PodRejected``
and ``ObjectRejected``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledgerlet_core.apiserver.admission import (
    admit_pod,
    default_conflict,
    validate_priority_class,
    validate_priority_class_update,
)
from ledgerlet_core.apiserver.priority_admission import known_classes
from ledgerlet_core.apiserver.quota import check_quota, pod_usage, quota_matches
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import Pod, PriorityClass, ResourceQuota, RuntimeClass
from ledgerlet_core.model.k8s.priority import system_priority_classes

SYSTEM_CLASS_NAMES = frozenset(pc.metadata.name for pc in system_priority_classes())
SYSTEM_CLASS_UNDELETABLE = "this is a system priority class and cannot be deleted"
_RESOURCES = {
    "PriorityClass": "priorityclasses.scheduling.k8s.io",
    "RuntimeClass": "runtimeclasses.node.k8s.io",
    "ResourceQuota": "resourcequotas",
    "PodDisruptionBudget": "poddisruptionbudgets.policy",
}


def not_found(kind: str, namespace: str, name: str) -> str:
    """The API server's 404 text for a delete of an object that is not there."""
    return f'{_RESOURCES.get(kind, kind.lower() + "s")} "{name}" not found'


class ApiServer:
    def __init__(self) -> None:
        self.classes: dict[str, PriorityClass] = known_classes()
        self.runtime_classes: dict[str, RuntimeClass] = {}
        self.quotas: dict[str, ResourceQuota] = {}
        #: per quota, what is charged against it; per pod, what it charged where
        self.quota_used: dict[str, dict[str, int]] = {}
        self._charged: dict[str, list[tuple[str, dict[str, int]]]] = {}
        #: DefaultTolerationSeconds (kube-apiserver flags, given as controllerConfig)
        self.not_ready_seconds = 300
        self.unreachable_seconds = 300

    def configure(self, controller_config: Mapping[str, Any]) -> None:
        self.not_ready_seconds = int(controller_config.get("defaultNotReadyTolerationSeconds", 300))
        self.unreachable_seconds = int(controller_config.get("defaultUnreachableTolerationSeconds", 300))

    # -- objects that exist --------------------------------------------------------------
    def class_exists(self, pc: PriorityClass) -> None:
        """A class of the scenario's ``objects`` (checked when the scenario was loaded)."""
        self.classes[pc.metadata.name] = pc

    def runtime_class_applied(self, rc: RuntimeClass) -> None:
        self.runtime_classes[rc.metadata.name] = rc

    def quota_applied(self, quota: ResourceQuota) -> None:
        key = object_key(quota.metadata.namespace, quota.metadata.name)
        self.quotas[key] = quota
        self.quota_used.setdefault(key, {})

    # -- deletes -------------------------------------------------------------------------
    def delete(self, kind: str, namespace: str, name: str) -> dec.ObjectRejected | None:
        """Delete a PriorityClass, RuntimeClass or ResourceQuota: None when it went, else why
        not (a system class cannot be deleted; an object that is not there is NotFound).
        Later admissions read what is left: pods without a class get the lowest remaining
        global default (or priority 0), a pod naming a deleted class is refused."""
        if kind == "PriorityClass":
            if name in SYSTEM_CLASS_NAMES:  # ``priorityclass/storage/storage.go: Delete``
                message = f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: {SYSTEM_CLASS_UNDELETABLE}'
                return dec.ObjectRejected(kind=kind, name=name, reason="Forbidden", message=message)
            gone = self.classes.pop(name, None) is not None
        elif kind == "RuntimeClass":
            gone = self.runtime_classes.pop(name, None) is not None
        elif kind == "ResourceQuota":
            key = object_key(namespace, name)
            gone = self.quotas.pop(key, None) is not None
            self.quota_used.pop(key, None)
        else:
            raise ValueError(f"the API server's admission holds no {kind}")
        if gone:
            return None
        return dec.ObjectRejected(kind=kind, name=name, reason="NotFound", message=not_found(kind, namespace, name))

    # -- admission ---------------------------------------------------------------------
    def admit_class(self, pc: PriorityClass) -> dec.ObjectRejected | None:
        """Create or update a PriorityClass: None when accepted, else why it was refused."""
        name = pc.metadata.name
        old = self.classes.get(name)
        error = validate_priority_class(pc)
        if error is None and old is not None:
            error = validate_priority_class_update(old, pc)
        conflict = default_conflict(pc, self.classes) if error is None else None
        if error is not None:  # validation: 422 Invalid
            reason = "Invalid"
            message = f'PriorityClass.scheduling.k8s.io "{name}" is invalid: {error.field}: {error.message}'
        elif conflict is not None:  # the Priority admission plugin: 403 Forbidden
            reason = "Forbidden"
            message = f'priorityclasses.scheduling.k8s.io "{name}" is forbidden: {conflict.message}'
        else:
            self.classes[name] = pc
            return None
        return dec.ObjectRejected(kind="PriorityClass", name=name, reason=reason, message=message)

    def admit_pod(self, raw: Pod) -> Pod:
        """The pod as stored: mutated by the admission chain and checked against quota
        (:class:`~ledgerlet_core.apiserver.priority_admission.AdmissionError` when refused). It is
        charged to its quotas."""
        pod = admit_pod(
            raw,
            self.classes,
            self.runtime_classes,
            not_ready_seconds=self.not_ready_seconds,
            unreachable_seconds=self.unreachable_seconds,
        )
        error = check_quota(pod, self.quotas.values(), self.quota_used)
        if error is not None:
            raise error
        self.charge(pod)
        return pod

    # -- quota usage ---------------------------------------------------------------------
    def charge(self, pod: Pod) -> None:
        """What the pod holds, charged to every quota that matches it (none: nothing to
        work out, nothing to keep; a fleet's pods mostly meet no quota)."""
        if not self.quotas:
            self._charged.pop(pod.key, None)  # (as a charge to no quota would leave it)
            return
        usage = pod_usage(pod)
        charged = []
        for key, q in self.quotas.items():
            if quota_matches(q, pod):
                used = self.quota_used.setdefault(key, {})
                mine = {k: v for k, v in usage.items() if k in q.spec.hard}
                for k, v in mine.items():
                    used[k] = used.get(k, 0) + v
                charged.append((key, mine))
        if charged:
            self._charged[pod.key] = charged
        else:
            self._charged.pop(pod.key, None)

    def release(self, key: str) -> None:
        """The pod holds nothing any more (gone, failed, or deleted before it was bound)."""
        for qkey, mine in self._charged.pop(key, []):
            used = self.quota_used.get(qkey, {})
            for k, v in mine.items():
                used[k] = used.get(k, 0) - v
