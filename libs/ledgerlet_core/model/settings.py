"""Settings are never silently ignored: a name that is no setting is an input error
with the closest one suggested; a real KubeletConfiguration field that ledgerlet does
not model (nothing it decides reads it) is accepted, as a recorded kubelet's
configuration holds dozens of them, and said to be ignored.

Unknown fields of Kubernetes *objects* stay ignored, as the API server ignores them;
this is only for ledgerlet's own settings.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any, Final

from ledgerlet_core.model.errors import InputError

#: Every field of upstream's KubeletConfiguration (``json`` names of
#: staging/src/k8s.io/kubelet/config/v1beta1/types.go, v1.35), with ``kind`` and
#: ``apiVersion``, and one that older kubelets' configz still shows.
UPSTREAM_KUBELET_FIELDS: Final = frozenset(
    {
        "kind", "apiVersion",
        "enableServer", "staticPodPath", "podLogsDir", "syncFrequency", "fileCheckFrequency",
        "httpCheckFrequency", "staticPodURL", "staticPodURLHeader", "address", "port", "readOnlyPort",
        "tlsCertFile", "tlsPrivateKeyFile", "tlsCipherSuites", "tlsCurvePreferences", "tlsMinVersion",
        "rotateCertificates", "serverTLSBootstrap", "authentication", "authorization", "registryPullQPS",
        "registryBurst", "imagePullCredentialsVerificationPolicy", "preloadedImagesVerificationAllowlist",
        "eventRecordQPS", "eventBurst", "enableDebuggingHandlers", "enableContentionProfiling", "healthzPort",
        "healthzBindAddress", "oomScoreAdj", "clusterDomain", "clusterDNS", "streamingConnectionIdleTimeout",
        "nodeStatusUpdateFrequency", "nodeStatusReportFrequency", "nodeLeaseDurationSeconds",
        "imageMinimumGCAge", "imageMaximumGCAge", "imageGCHighThresholdPercent", "imageGCLowThresholdPercent",
        "volumeStatsAggPeriod", "kubeletCgroups", "systemCgroups", "cgroupRoot", "cgroupsPerQOS",
        "cgroupDriver", "cpuManagerPolicy", "singleProcessOOMKill", "cpuManagerPolicyOptions",
        "cpuManagerReconcilePeriod", "draManagerReconcilePeriod", "memoryManagerPolicy",
        "topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions", "qosReserved",
        "runtimeRequestTimeout", "hairpinMode", "maxPods", "podCIDR", "podPidsLimit", "resolvConf", "runOnce",
        "cpuCFSQuota", "cpuCFSQuotaPeriod", "nodeStatusMaxImages", "maxOpenFiles", "contentType", "kubeAPIQPS",
        "kubeAPIBurst", "serializeImagePulls", "maxParallelImagePulls", "evictionHard", "evictionSoft",
        "evictionSoftGracePeriod", "evictionPressureTransitionPeriod", "evictionMaxPodGracePeriod",
        "evictionMinimumReclaim", "mergeDefaultEvictionSettings", "podsPerCore",
        "enableControllerAttachDetach", "protectKernelDefaults", "makeIPTablesUtilChains",
        "iptablesMasqueradeBit", "iptablesDropBit", "featureGates", "failSwapOn", "memorySwap",
        "containerLogMaxSize", "containerLogMaxFiles", "containerLogMaxWorkers", "containerLogMonitorInterval",
        "configMapAndSecretChangeDetectionStrategy", "systemReserved", "kubeReserved", "reservedSystemCPUs",
        "showHiddenMetricsForVersion", "systemReservedCgroup", "kubeReservedCgroup", "enforceNodeAllocatable",
        "allowedUnsafeSysctls", "volumePluginDir", "providerID", "kernelMemcgNotification", "logging",
        "enableSystemLogHandler", "enableSystemLogQuery", "shutdownGracePeriod",
        "shutdownGracePeriodCriticalPods", "shutdownGracePeriodByPodPriority", "crashLoopBackOff",
        "reservedMemory", "enableProfilingHandler", "enableDebugFlagsHandler", "seccompDefault",
        "memoryThrottlingFactor", "memoryReservationPolicy", "registerWithTaints", "registerNode", "tracing",
        "localStorageCapacityIsolation", "containerRuntimeEndpoint", "imageServiceEndpoint", "failCgroupV1",
        "userNamespaces",
        "enableCAdvisorJSONEndpoints",  # removed in v1.23; recorded configz of older kubelets show it
    }
)  # fmt: skip


def suggestion(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known name, else nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not close:  # a wrong case is a common slip: evictionhard
        close = [k for k in sorted(known) if k.lower() == name.lower()][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(name: str, known: Iterable[str], *, what: str, obj: str, field: str) -> InputError:
    return InputError(f"unknown {what} {name!r}{suggestion(name, known)}", obj=obj, field=field)


def check_settings(
    raw: Mapping[str, Any],
    modelled: Iterable[str],
    *,
    what: str,
    obj: str,
    prefix: str,
    upstream: frozenset[str] = frozenset(),
) -> list[str]:
    """Refuse a name in ``raw`` that is neither ``modelled`` nor ``upstream``'s; return
    the upstream fields ledgerlet does not model, each as a warning."""
    modelled = frozenset(modelled)
    ignored = []
    for name in raw:
        if name in modelled:
            continue
        if name in upstream:
            ignored.append(name)
            continue
        raise unknown(str(name), modelled, what=what, obj=obj, field=f"{prefix}.{name}" if prefix else str(name))
    return [
        f"{prefix}.{name}: a {what} ledgerlet does not model (nothing it decides reads it); ignored"
        for name in ignored
        if name not in ("kind", "apiVersion")
    ]
