"""kube-controller-manager settings a scenario may give (``spec.controllerConfig``),
with upstream's defaults."""

from __future__ import annotations

import msgspec


class ControllerConfig(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    node_monitor_grace_period: str = "40s"
    #: the spec's (and kube-controller-manager's) spelling; camel case alone would make it
    #: terminatedPodGcThreshold, and the documented name was once silently ignored
    terminated_pod_gc_threshold: int = msgspec.field(default=12500, name="terminatedPodGCThreshold")
    disable_force_detach_on_timeout: bool = False
    default_not_ready_toleration_seconds: int = 300
    default_unreachable_toleration_seconds: int = 300
    feature_gates: dict[str, bool] = {}


#: the names a scenario writes
CONTROLLER_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(ControllerConfig))
#: the feature gates ledgerlet's controllers read: none yet, so every real gate set in
#: ``featureGates`` is accepted with a warning (and a name no component knows refused)
CONTROLLER_GATES: frozenset[str] = frozenset()
