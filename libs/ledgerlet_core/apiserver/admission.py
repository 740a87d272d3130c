"""The API server's side of scheduling: PriorityClass validation and the pod admission
plugins that run before a pod is stored.

Upstream: ``pkg/apis/scheduling/validation/validation.go: ValidatePriorityClass``,
``ValidatePriorityClassUpdate``; ``plugin/pkg/admission/priority/admission.go``
(one default; pods); ``plugin/pkg/admission/runtimeclass/admission.go`` (``setOverhead``,
``setScheduling``, ``validateOverhead``); ``plugin/pkg/admission/defaulttolerationseconds``;
``plugin/pkg/admission/podtolerationrestriction`` (memory-pressure toleration for
non-BestEffort pods, as the reference restates it).
"""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from ledgerlet_core.apiserver.priority_admission import AdmissionError, admit_priority, with_status
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.objects import Pod, PriorityClass, RuntimeClass, Toleration
from ledgerlet_core.model.k8s.priority import (
    HIGHEST_USER_DEFINABLE_PRIORITY,
    SYSTEM_PRIORITY_CLASS_PREFIX,
    system_priority_classes,
)
from ledgerlet_core.model.k8s.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_UNREACHABLE,
)
from ledgerlet_core.model.k8s.validation import is_dns1123_subdomain
from ledgerlet_core.model.quantity import Quantity, parse_quantity

PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def validate_priority_class(pc: PriorityClass) -> AdmissionError | None:
    """``ValidatePriorityClass``: the field and upstream's message, or None."""
    name = pc.metadata.name
    if pc.metadata.namespace:
        return AdmissionError("Forbidden: not allowed on this type", "metadata.namespace")
    if not is_dns1123_subdomain(name):
        return AdmissionError(f'Invalid value: "{name}": a lowercase RFC 1123 subdomain', "metadata.name")
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        system = {c.metadata.name: c for c in system_priority_classes()}
        known = system.get(name)
        why = None
        if known is None:
            why = f"{name} is not a known system priority class"
        elif pc.value != known.value:
            why = f"value of {name} PriorityClass must be {known.value}"
        elif pc.global_default:
            why = f"globalDefault of {name} PriorityClass must be false"
        if why is not None:
            return AdmissionError(
                f"Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: {why}",
                "metadata.name",
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        return AdmissionError(
            f"Forbidden: maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            "value",
        )
    if pc.preemption_policy is not None and pc.preemption_policy not in PREEMPTION_POLICIES:
        return AdmissionError(
            f'Unsupported value: "{pc.preemption_policy}": supported values: "Never", "PreemptLowerPriority"',
            "preemptionPolicy",
        )
    return None


def validate_priority_class_update(old: PriorityClass, new: PriorityClass) -> AdmissionError | None:
    """``ValidatePriorityClassUpdate``: value and preemptionPolicy are immutable."""
    if new.value != old.value:
        return AdmissionError("Forbidden: may not be changed in an update.", "value")
    if (new.preemption_policy or "PreemptLowerPriority") != (old.preemption_policy or "PreemptLowerPriority"):
        return AdmissionError(f'Invalid value: "{new.preemption_policy}": field is immutable', "preemptionPolicy")
    return None


def default_conflict(new: PriorityClass, classes: Mapping[str, PriorityClass]) -> AdmissionError | None:
    """The Priority plugin on a class: only one ``globalDefault`` may exist."""
    if not new.global_default:
        return None
    for other in classes.values():
        if other.global_default and other.metadata.name != new.metadata.name:
            return AdmissionError(
                f"PriorityClass {other.metadata.name} is already marked as default. Only one default can exist",
                "globalDefault",
            )
    return None


def _same(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> bool:
    return a.keys() == b.keys() and all(a[k].nanos == b[k].nanos for k in a)


def admit_runtime_class(pod: Pod, runtime_classes: Mapping[str, RuntimeClass]) -> Pod:
    """``RuntimeClass`` admission: overhead from ``overhead.podFixed`` (an equal pre-set
    overhead is accepted), the class's node selector and tolerations merged in."""
    name = pod.spec.runtime_class_name
    forbidden = f'pods "{pod.metadata.name}" is forbidden: '
    given = pod.spec.overhead or {}
    if name is None:
        if given:
            raise AdmissionError(
                forbidden + "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
                "spec.overhead",
            )
        return pod
    rc = runtime_classes.get(name)
    if rc is None:
        raise AdmissionError(forbidden + f'pod rejected: RuntimeClass "{name}" not found', "spec.runtimeClassName")
    spec = pod.spec
    fixed = rc.overhead.pod_fixed if rc.overhead is not None else {}
    if fixed:
        if given and not _same(given, fixed):
            raise AdmissionError(
                forbidden + "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
                "spec.overhead",
            )
        spec = msgspec.structs.replace(spec, overhead=dict(fixed))
    elif given:
        raise AdmissionError(
            forbidden + "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            "spec.overhead",
        )
    if rc.scheduling is not None:
        selector = dict(spec.node_selector)
        for k, v in rc.scheduling.node_selector.items():
            if k in selector and selector[k] != v:
                raise AdmissionError(
                    forbidden + f"conflict: runtimeClass.scheduling.nodeSelector[{k}] = {v}; "
                    f"pod.spec.nodeSelector[{k}] = {selector[k]}",
                    "spec.nodeSelector",
                )
            selector[k] = v
        tolerations = list(spec.tolerations)
        tolerations += [t for t in rc.scheduling.tolerations if t not in tolerations]
        spec = msgspec.structs.replace(spec, node_selector=selector, tolerations=tolerations)
    return msgspec.structs.replace(pod, spec=spec)


def add_default_tolerations(pod: Pod, not_ready_seconds: int, unreachable_seconds: int) -> Pod:
    """DefaultTolerationSeconds (not-ready / unreachable NoExecute for 300 s unless the pod
    has its own) and the memory-pressure toleration of non-BestEffort pods."""
    tolerations = list(pod.spec.tolerations)

    def has(key: str, effect: str) -> bool:
        return any(t.key == key and t.effect in ("", effect) for t in tolerations) or any(
            not t.key and t.operator == "Exists" and t.effect in ("", effect) for t in tolerations
        )

    for key, seconds in ((TAINT_NODE_NOT_READY, not_ready_seconds), (TAINT_NODE_UNREACHABLE, unreachable_seconds)):
        if not has(key, NO_EXECUTE):
            tolerations.append(Toleration(key=key, operator="Exists", effect=NO_EXECUTE, toleration_seconds=seconds))
    if pod.status.qos_class != "BestEffort" and not has(TAINT_NODE_MEMORY_PRESSURE, NO_SCHEDULE):
        tolerations.append(Toleration(key=TAINT_NODE_MEMORY_PRESSURE, operator="Exists", effect=NO_SCHEDULE))
    if tolerations == pod.spec.tolerations:
        return pod
    return msgspec.structs.replace(pod, spec=msgspec.structs.replace(pod.spec, tolerations=tolerations))


def admit_pod(
    pod: Pod,
    classes: Mapping[str, PriorityClass],
    runtime_classes: Mapping[str, RuntimeClass],
    *,
    not_ready_seconds: int = 300,
    unreachable_seconds: int = 300,
) -> Pod:
    """The mutating and validating plugins in upstream's order (RuntimeClass, Priority,
    DefaultTolerationSeconds), then the status the server sets."""
    pod = admit_runtime_class(pod, runtime_classes)
    pod = with_status(admit_priority(pod, classes))
    return add_default_tolerations(pod, not_ready_seconds, unreachable_seconds)


def admitted_record(pod: Pod) -> dec.PodAdmitted:
    """The ``PodAdmitted`` decision for a pod admission let through (what it set)."""
    spec = pod.spec
    return dec.PodAdmitted(
        priority=spec.priority or 0,
        qos_class=pod.status.qos_class,
        overhead={k: str(v) for k, v in (spec.overhead or {}).items()},
        priority_class_name=spec.priority_class_name,
        preemption_policy=spec.preemption_policy or "",
        node_selector=dict(spec.node_selector),
        tolerations=[msgspec.to_builtins(t) for t in spec.tolerations],
    )


def apply_admitted(pod: Pod, data: dec.PodAdmitted) -> Pod:
    """A consumer's copy of a pod, as admission left it."""
    spec = msgspec.structs.replace(
        pod.spec,
        priority=data.priority,
        priority_class_name=data.priority_class_name,
        preemption_policy=data.preemption_policy or None,
        overhead={k: parse_quantity(v) for k, v in data.overhead.items()} or pod.spec.overhead,
        node_selector=data.node_selector,
        tolerations=[convert(t, Toleration) for t in data.tolerations],
    )
    status = msgspec.structs.replace(pod.status, qos_class=data.qos_class or pod.status.qos_class)
    return msgspec.structs.replace(pod, spec=spec, status=status)
