"""KubeletConfiguration: the fields eviction, admission and shutdown read.

Defaults are upstream's (``pkg/kubelet/apis/config/v1beta1/defaults.go``); validation
messages are ``pkg/kubelet/apis/config/validation/validation.go:
ValidateKubeletConfiguration``'s; thresholds are parsed by
:func:`ledgerlet_core.kubelet.eviction.thresholds.parse_threshold_config`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from ledgerlet_core.kubelet.eviction.thresholds import (
    Threshold,
    ThresholdError,
    effective_eviction_hard,
    parse_threshold_config,
)
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.duration import SECOND, DurationError, format_duration, parse_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.model.settings import check_gates, check_settings, suggestion
from ledgerlet_core.model.upstream_settings import UPSTREAM_FEATURE_GATES, UPSTREAM_KUBELET_FIELDS

#: Feature gates ledgerlet models, with their Kubernetes v1.34 defaults.
FEATURE_GATE_DEFAULTS: Final[dict[str, bool]] = {
    "GracefulNodeShutdown": True,
    "GracefulNodeShutdownBasedOnPodPriority": True,
    "KubeletSeparateDiskGC": True,
    "PodLevelResources": True,
    "ImageMaximumGCAge": True,
    "SidecarContainers": True,
    "NodeOutOfServiceVolumeDetach": True,
}

_VALID_ENFORCEMENTS: Final = ("pods", "system-reserved", "kube-reserved", "none")
#: what systemReserved and kubeReserved may reserve (cmd/kubelet/app/server.go: parseResourceList)
_RESERVABLE: Final = ("cpu", "memory", "ephemeral-storage", "pid")


class ShutdownGracePeriodByPodPriority(msgspec.Struct, rename="camel", kw_only=True):
    priority: int
    shutdown_grace_period_seconds: int


class KubeletConfigSpec(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """The fields as written in a scenario (KubeletConfiguration names, upstream defaults)."""

    eviction_hard: dict[str, str] | None = None
    eviction_soft: dict[str, str] = {}
    eviction_soft_grace_period: dict[str, str] = {}
    eviction_max_pod_grace_period: int = 0
    eviction_minimum_reclaim: dict[str, str] = {}
    eviction_pressure_transition_period: str = "5m"
    merge_default_eviction_settings: bool = False
    housekeeping_interval: str = "10s"
    node_status_update_frequency: str = "10s"
    kernel_memcg_notification: bool = False
    local_storage_capacity_isolation: bool = True
    enforce_node_allocatable: list[str] = msgspec.field(default_factory=lambda: ["pods"])
    image_gc_high_threshold_percent: int = msgspec.field(default=85, name="imageGCHighThresholdPercent")
    image_gc_low_threshold_percent: int = msgspec.field(default=80, name="imageGCLowThresholdPercent")
    image_gc_period: str = msgspec.field(default="5m", name="imageGCPeriod")
    image_minimum_gc_age: str = msgspec.field(default="2m", name="imageMinimumGCAge")
    image_maximum_gc_age: str = msgspec.field(default="0s", name="imageMaximumGCAge")
    system_reserved: dict[str, Quantity] = {}
    kube_reserved: dict[str, Quantity] = {}
    #: None: the Node object's declared ``capacity.pods``, else upstream's default 110
    max_pods: int | None = None
    pods_per_core: int = 0
    shutdown_grace_period: str = "0s"
    shutdown_grace_period_critical_pods: str = "0s"
    shutdown_grace_period_by_pod_priority: list[ShutdownGracePeriodByPodPriority] = []
    logind_inhibit_delay_max: str = "5s"
    #: what logind reports after the kubelet's drop-in and reload (:mod:`.logind`); None: the raise took
    logind_inhibit_delay_max_after_reload: str | None = None
    feature_gates: dict[str, bool] = {}


#: the names a scenario writes (KubeletConfiguration's, and the few ledgerlet adds)
KUBELET_FIELDS: Final = frozenset(f.encode_name for f in msgspec.structs.fields(KubeletConfigSpec))


def check_kubelet_settings(raw: Mapping[str, Any], *, obj: str, prefix: str) -> list[str]:
    """Refuse a kubelet setting that is no KubeletConfiguration field (with the closest
    suggested); warn of upstream fields ledgerlet does not model. For input a user
    writes (a scenario, an annotation, a what-if), not for what a stored run holds."""
    warnings = check_settings(
        raw, KUBELET_FIELDS, what="KubeletConfiguration field", obj=obj, prefix=prefix, upstream=UPSTREAM_KUBELET_FIELDS
    )
    warnings += check_gates(raw.get("featureGates"), FEATURE_GATE_DEFAULTS, obj=obj, prefix=prefix)
    for kind in ("systemReserved", "kubeReserved"):
        reserved = raw.get(kind)
        if not isinstance(reserved, Mapping):
            continue
        for resource in reserved:
            if resource not in _RESERVABLE:  # (here, not in _validate: stored runs replay as they ran)
                hint = suggestion(str(resource), _RESERVABLE)
                raise _fail(f'cannot reserve "{resource}" resource{hint}', obj, f"{prefix}.{kind}.{resource}")
        if "pid" in reserved:  # upstream reserves pids; no decision reads that
            warnings.append(f"{prefix}.{kind}.pid: a reservation ledgerlet does not model; ignored")
    return warnings


@dataclass(frozen=True, slots=True)
class KubeletConfig:
    """A resolved configuration: durations in ns, thresholds parsed, gates filled in."""

    spec: KubeletConfigSpec
    thresholds: tuple[Threshold, ...]
    eviction_pressure_transition_period: int
    housekeeping_interval: int
    node_status_update_frequency: int
    image_gc_period: int
    image_minimum_gc_age: int
    image_maximum_gc_age: int
    shutdown_grace_period: int
    shutdown_grace_period_critical_pods: int
    logind_inhibit_delay_max: int
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    logind_inhibit_delay_max_after_reload: int | None = None

    @property
    def eviction_max_pod_grace_period(self) -> int:
        return self.spec.eviction_max_pod_grace_period

    def gate(self, name: str) -> bool:
        return bool(self.feature_gates.get(name, FEATURE_GATE_DEFAULTS.get(name, False)))


_DURATION_FIELDS: Final = {
    "eviction_pressure_transition_period": "evictionPressureTransitionPeriod",
    "housekeeping_interval": "housekeepingInterval",
    "node_status_update_frequency": "nodeStatusUpdateFrequency",
    "image_gc_period": "imageGCPeriod",
    "image_minimum_gc_age": "imageMinimumGCAge",
    "image_maximum_gc_age": "imageMaximumGCAge",
    "shutdown_grace_period": "shutdownGracePeriod",
    "shutdown_grace_period_critical_pods": "shutdownGracePeriodCriticalPods",
    "logind_inhibit_delay_max": "logindInhibitDelayMax",
}


def merge_config(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    """A node's override replaces whole fields (a map such as evictionHard included)."""
    return {**base, **override}


def resolve_kubelet_config(raw: Mapping[str, Any] | None, *, obj: str = "spec.kubeletConfig") -> KubeletConfig:
    """Typed, defaulted and validated configuration, or :class:`InputError` naming the field."""
    spec = convert(dict(raw or {}), KubeletConfigSpec, obj=obj)
    durations: dict[str, int] = {}
    for attr, name in _DURATION_FIELDS.items():
        try:
            durations[attr] = parse_duration(getattr(spec, attr))
        except DurationError as exc:
            raise InputError(str(exc), obj=obj, field=name) from None
    gates = dict(FEATURE_GATE_DEFAULTS)
    for gate, enabled in spec.feature_gates.items():
        if gate in FEATURE_GATE_DEFAULTS:
            gates[gate] = enabled
        elif gate not in UPSTREAM_FEATURE_GATES:  # a real gate ledgerlet does not model is accepted, unread
            hint = suggestion(gate, FEATURE_GATE_DEFAULTS.keys() | UPSTREAM_FEATURE_GATES)
            raise InputError(f"unrecognized feature gate: {gate}{hint}", obj=obj, field=f"featureGates.{gate}")
    _validate(spec, durations, gates, obj)
    hard = effective_eviction_hard(spec.eviction_hard, merge_defaults=spec.merge_default_eviction_settings)
    try:
        thresholds = parse_threshold_config(
            spec.enforce_node_allocatable,
            hard,
            spec.eviction_soft,
            spec.eviction_soft_grace_period,
            spec.eviction_minimum_reclaim,
        )
    except ThresholdError as exc:
        where = f"{exc.setting}.{exc.key}" if exc.key else exc.setting
        raise InputError(str(exc), obj=obj, field=where) from None
    after_reload = None
    if spec.logind_inhibit_delay_max_after_reload is not None:
        try:
            after_reload = parse_duration(spec.logind_inhibit_delay_max_after_reload)
        except DurationError as exc:
            raise InputError(str(exc), obj=obj, field="logindInhibitDelayMaxAfterReload") from None
        if after_reload < 0:
            raise _fail(
                "logindInhibitDelayMaxAfterReload must not be negative", obj, "logindInhibitDelayMaxAfterReload"
            )
    return KubeletConfig(
        spec=spec,
        thresholds=tuple(thresholds),
        feature_gates=gates,
        logind_inhibit_delay_max_after_reload=after_reload,
        **durations,
    )


def _fail(message: str, obj: str, field: str) -> InputError:
    return InputError(f"invalid configuration: {message}", obj=obj, field=field)


def _validate(spec: KubeletConfigSpec, d: Mapping[str, int], gates: Mapping[str, bool], obj: str) -> None:
    high, low = spec.image_gc_high_threshold_percent, spec.image_gc_low_threshold_percent
    if not 0 <= high <= 100:
        raise _fail(
            f"imageGCHighThresholdPercent (--image-gc-high-threshold) {high} must be between 0 and 100, inclusive",
            obj,
            "imageGCHighThresholdPercent",
        )
    if not 0 <= low <= 100:
        raise _fail(
            f"imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be between 0 and 100, inclusive",
            obj,
            "imageGCLowThresholdPercent",
        )
    if low >= high:
        raise _fail(
            f"imageGCLowThresholdPercent (--image-gc-low-threshold) {low} must be less than "
            f"imageGCHighThresholdPercent (--image-gc-high-threshold) {high}",
            obj,
            "imageGCLowThresholdPercent",
        )
    min_age, max_age = d["image_minimum_gc_age"], d["image_maximum_gc_age"]
    if min_age < 0:
        raise _fail(f"imageMinimumGCAge {format_duration(min_age)} must not be negative", obj, "imageMinimumGCAge")
    if max_age < 0:
        raise _fail(f"imageMaximumGCAge {format_duration(max_age)} must not be negative", obj, "imageMaximumGCAge")
    if max_age > 0 and max_age <= min_age:
        raise _fail(
            f"imageMaximumGCAge {format_duration(max_age)} must be greater than imageMinimumGCAge "
            f"{format_duration(min_age)}",
            obj,
            "imageMaximumGCAge",
        )
    if spec.max_pods is not None and spec.max_pods < 0:
        raise _fail(f"maxPods (--max-pods) {spec.max_pods} must not be a negative number", obj, "maxPods")
    if spec.pods_per_core < 0:
        raise _fail(
            f"podsPerCore (--pods-per-core) {spec.pods_per_core} must not be a negative number", obj, "podsPerCore"
        )
    for attr in ("housekeeping_interval", "node_status_update_frequency", "image_gc_period"):
        if d[attr] <= 0:
            name = _DURATION_FIELDS[attr]
            raise _fail(f"{name} {format_duration(d[attr])} must be greater than 0", obj, name)
    if d["eviction_pressure_transition_period"] < 0:
        raise _fail("evictionPressureTransitionPeriod must not be negative", obj, "evictionPressureTransitionPeriod")
    _validate_shutdown(spec, d, gates, obj)
    enforcements = spec.enforce_node_allocatable
    for value in enforcements:
        if value not in _VALID_ENFORCEMENTS:
            raise _fail(
                f'option "{value}" specified for enforceNodeAllocatable (--enforce-node-allocatable). '
                'Valid options are "pods", "system-reserved", "kube-reserved", or "none"',
                obj,
                "enforceNodeAllocatable",
            )
    if "none" in enforcements and len(set(enforcements)) > 1:
        raise _fail(
            "enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional "
            'enforcements when "none" is specified',
            obj,
            "enforceNodeAllocatable",
        )
    for kind, reserved in (("systemReserved", spec.system_reserved), ("kubeReserved", spec.kube_reserved)):
        for resource, q in reserved.items():
            if q.sign() < 0:
                raise _fail(f"{kind}[{resource}] {q} must not be negative", obj, f"{kind}.{resource}")


def _validate_shutdown(spec: KubeletConfigSpec, d: Mapping[str, int], gates: Mapping[str, bool], obj: str) -> None:
    period, critical = d["shutdown_grace_period"], d["shutdown_grace_period_critical_pods"]
    if gates["GracefulNodeShutdown"]:
        if critical > period:
            raise _fail(
                f"shutdownGracePeriodCriticalPods {format_duration(critical)} must be <= "
                f"shutdownGracePeriod {format_duration(period)}",
                obj,
                "shutdownGracePeriodCriticalPods",
            )
        if period < 0 or 0 < period < SECOND:
            raise _fail(
                f"shutdownGracePeriod {format_duration(period)} must be either zero or otherwise >= 1 sec",
                obj,
                "shutdownGracePeriod",
            )
        if critical < 0 or 0 < critical < SECOND:
            raise _fail(
                f"shutdownGracePeriodCriticalPods {format_duration(critical)} must be either zero or "
                "otherwise >= 1 sec",
                obj,
                "shutdownGracePeriodCriticalPods",
            )
    elif period > 0 or critical > 0:
        raise _fail(
            "specifying shutdownGracePeriod or shutdownGracePeriodCriticalPods requires feature gate "
            "GracefulNodeShutdown",
            obj,
            "shutdownGracePeriod",
        )
    by_priority = spec.shutdown_grace_period_by_pod_priority
    if gates["GracefulNodeShutdownBasedOnPodPriority"]:
        if by_priority and (period > 0 or critical > 0):
            raise _fail(
                "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time",
                obj,
                "shutdownGracePeriodByPodPriority",
            )
    elif by_priority:
        raise _fail(
            "Specifying shutdownGracePeriodByPodPriority requires feature gate GracefulNodeShutdownBasedOnPodPriority",
            obj,
            "shutdownGracePeriodByPodPriority",
        )


KUBELET_CONFIG_ANNOTATION: Final = "ledgerlet/kubelet-config"


def node_override(annotations: Mapping[str, str]) -> dict[str, Any] | None:
    """The node's ``ledgerlet/kubelet-config`` annotation as a JSON object, if any.

    Raises ``ValueError`` (with the reason) when it is not a JSON object.
    """
    raw = annotations.get(KUBELET_CONFIG_ANNOTATION)
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not a JSON object: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError("expected a JSON object of KubeletConfiguration fields")
    return value


def config_for_node(base: Mapping[str, Any], annotations: Mapping[str, str], *, obj: str = "") -> KubeletConfig:
    """The scenario's kubeletConfig with the node's annotation override applied."""
    field_name = f"metadata.annotations.{KUBELET_CONFIG_ANNOTATION}"
    try:
        override = node_override(annotations)
    except ValueError as exc:
        raise InputError(str(exc), obj=obj, field=field_name) from None
    if override is None:
        return resolve_kubelet_config(base, obj=obj or "spec.kubeletConfig")
    try:
        return resolve_kubelet_config(merge_config(base, override), obj=obj)
    except InputError as exc:
        raise InputError(exc.message, obj=obj, field=f"{field_name}.{exc.field}") from None
