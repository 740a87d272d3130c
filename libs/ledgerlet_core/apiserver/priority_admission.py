"""API-server admission of pods: the Priority plugin, and the status the server sets.

Upstream: ``plugin/pkg/admission/priority/admission.go: admitPod`` (priorityClassName ->
spec.priority and preemptionPolicy; the global default, lowest value if several; a
pre-set priority must match), and ``status.qosClass`` set on creation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from ledgerlet_core.model.k8s.objects import Pod, PriorityClass
from ledgerlet_core.model.k8s.priority import system_priority_classes
from ledgerlet_core.model.k8s.qos import compute_pod_qos


class AdmissionError(ValueError):
    """The API server refuses the pod: upstream's message, and the field it is about."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


def known_classes(objects: Mapping[str, PriorityClass] | None = None) -> dict[str, PriorityClass]:
    """The built-in system classes plus those given (by name)."""
    out = {pc.metadata.name: pc for pc in system_priority_classes()}
    out.update(objects or {})
    return out


def global_default(classes: Mapping[str, PriorityClass]) -> PriorityClass | None:
    """``getDefaultPriorityClass``: among globalDefault classes, the lowest value wins."""
    defaults = sorted((pc for pc in classes.values() if pc.global_default), key=lambda pc: pc.value)
    return defaults[0] if defaults else None


def admit_priority(pod: Pod, classes: Mapping[str, PriorityClass]) -> Pod:
    spec = pod.spec
    name = spec.priority_class_name
    forbidden = f'pods "{pod.metadata.name}" is forbidden: '
    if name:
        pc = classes.get(name)
        if pc is None:
            raise AdmissionError(forbidden + f"no PriorityClass with name {name} was found", "spec.priorityClassName")
        value, policy = pc.value, pc.preemption_policy
    else:
        default = global_default(classes)
        if default is not None:
            name, value, policy = default.metadata.name, default.value, default.preemption_policy
        else:
            value, policy = 0, "PreemptLowerPriority"
    if spec.priority is not None and spec.priority != value:
        raise AdmissionError(
            forbidden + f"the integer value of priority ({spec.priority}) must not be provided in pod spec; priority "
            f"admission controller computed {value} from the given PriorityClass name",
            "spec.priority",
        )
    if policy is not None and spec.preemption_policy is not None and spec.preemption_policy != policy:
        raise AdmissionError(
            forbidden + f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be provided in pod "
            f"spec; priority admission controller computed {policy} from the given PriorityClass name",
            "spec.preemptionPolicy",
        )
    spec = msgspec.structs.replace(
        spec, priority_class_name=name, priority=value, preemption_policy=policy or spec.preemption_policy
    )
    return msgspec.structs.replace(pod, spec=spec)


def with_status(pod: Pod) -> Pod:
    """``status.qosClass`` as the server sets it, and a phase (Running if bound, else Pending)."""
    status = pod.status
    changes: dict[str, Any] = {}
    if not status.qos_class:
        changes["qos_class"] = compute_pod_qos(pod)
    if not status.phase:
        changes["phase"] = "Running" if pod.spec.node_name else "Pending"
    return msgspec.structs.replace(pod, status=msgspec.structs.replace(status, **changes)) if changes else pod
