"""The names upstream Kubernetes accepts in the settings a scenario copies from a real
cluster, so that a real name ledgerlet does not model is told apart from a misspelt one
(the first is accepted and said to be ignored, the second refused).

* :data:`UPSTREAM_KUBELET_FIELDS`: the ``json`` names of KubeletConfiguration,
  kubernetes/kubernetes ``staging/src/k8s.io/kubelet/config/v1beta1/types.go`` (v1.35).
* :data:`UPSTREAM_FEATURE_GATES`: the gates a kubelet, kube-scheduler or
  kube-controller-manager accepts in ``featureGates`` (all share one registry): the
  names in kubernetes/kubernetes ``pkg/features/kube_features.go`` (v1.33, with the
  generic apiserver, apiextensions, zpages and controller-manager gates its versioned
  map relists) and those of the v1.35 kubelet's ``--feature-gates`` help (kubernetes/website
  ``content/*/docs/reference/command-line-tools-reference/kubelet.md``, which adds the
  client-go and logging gates and ``AllAlpha``/``AllBeta``). Gates removed before v1.35
  stay listed: recorded configurations of older clusters still hold them.
"""

from __future__ import annotations

from typing import Final

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

UPSTREAM_FEATURE_GATES: Final = frozenset(
    {
        # pkg/features/kube_features.go (v1.33): its own gates
        "AllowDNSOnlyNodeCSR", "AllowInsecureKubeletCertificateSigningRequests",
        "AllowOverwriteTerminationGracePeriodSeconds", "AllowServiceLBStatusOnNonLB", "AnyVolumeDataSource",
        "AuthorizeNodeWithSelectors", "ClusterTrustBundle", "ClusterTrustBundleProjection",
        "ContainerCheckpoint", "ContainerStopSignals", "CoordinatedLeaderElection", "CPUManagerPolicyAlphaOptions",
        "CPUManagerPolicyBetaOptions", "CPUManagerPolicyOptions", "CronJobsScheduledAnnotation",
        "CrossNamespaceVolumeDataSource", "CSIMigrationPortworx", "CSIVolumeHealth", "CustomCPUCFSQuotaPeriod",
        "DeclarativeValidation", "DeclarativeValidationTakeover", "DeploymentReplicaSetTerminatingReplicas",
        "DevicePluginCDIDevices", "DisableAllocatorDualWrite", "DisableCPUQuotaWithExclusiveCPUs",
        "DisableNodeKubeProxyVersion", "DRAAdminAccess", "DRADeviceTaints", "DRAPartitionableDevices",
        "DRAPrioritizedList", "DRAResourceClaimDeviceStatus", "DynamicResourceAllocation", "ElasticIndexedJob",
        "EventedPLEG", "ExecProbeTimeout", "ExternalServiceAccountTokenSigner", "GitRepoVolumeDriver",
        "GracefulNodeShutdown", "GracefulNodeShutdownBasedOnPodPriority", "HonorPVReclaimPolicy",
        "HPAConfigurableTolerance", "HPAScaleToZero", "ImageMaximumGCAge", "ImageVolume",
        "InPlacePodVerticalScaling", "InPlacePodVerticalScalingAllocatedStatus",
        "InPlacePodVerticalScalingExclusiveCPUs", "InTreePluginPortworxUnregister", "JobBackoffLimitPerIndex",
        "JobManagedBy", "JobPodReplacementPolicy", "JobSuccessPolicy", "KubeletCgroupDriverFromCRI",
        "KubeletCrashLoopBackOffMax", "KubeletEnsureSecretPulledImages", "KubeletFineGrainedAuthz",
        "KubeletInUserNamespace", "KubeletPodResourcesDynamicResources", "KubeletPodResourcesGet", "KubeletPSI",
        "KubeletRegistrationGetOnExistsOnly", "KubeletSeparateDiskGC",
        "KubeletServiceAccountTokenForCredentialProviders", "KubeletTracing", "LegacySidecarContainers",
        "LoadBalancerIPMode", "LocalStorageCapacityIsolationFSQuotaMonitoring", "LogarithmicScaleDown",
        "MatchLabelKeysInPodAffinity", "MatchLabelKeysInPodTopologySpread", "MaxUnavailableStatefulSet",
        "MemoryManager", "MemoryQoS", "MultiCIDRServiceAllocator", "MutableCSINodeAllocatableCount",
        "NFTablesProxyMode", "NodeInclusionPolicyInPodTopologySpread", "NodeLogQuery", "NodeSwap",
        "OrderedNamespaceDeletion", "PodAndContainerStatsFromCRI", "PodDeletionCost", "PodDisruptionConditions",
        "PodIndexLabel", "PodLevelResources", "PodLifecycleSleepAction", "PodLifecycleSleepActionAllowZero",
        "PodLogsQuerySplitStreams", "PodObservedGenerationTracking", "PodReadyToStartContainersCondition",
        "PodSchedulingReadiness", "PodTopologyLabelsAdmission", "PortForwardWebsockets",
        "PreferSameTrafficDistribution", "ProcMountType", "QOSReserved", "RecoverVolumeExpansionFailure",
        "RecursiveReadOnlyMounts", "ReduceDefaultCrashLoopBackOffDecay", "RelaxedDNSSearchValidation",
        "RelaxedEnvironmentVariableValidation", "ReloadKubeletServerCertificateFile", "ResourceHealthStatus",
        "RotateKubeletServerCertificate", "RuntimeClassInImageCriApi", "SchedulerAsyncPreemption",
        "SchedulerPopFromBackoffQ", "SchedulerQueueingHints", "SELinuxChangePolicy", "SELinuxMount",
        "SELinuxMountReadWriteOncePod", "SeparateTaintEvictionController", "ServiceAccountNodeAudienceRestriction",
        "ServiceAccountTokenJTI", "ServiceAccountTokenNodeBinding", "ServiceAccountTokenNodeBindingValidation",
        "ServiceAccountTokenPodNodeInfo", "ServiceTrafficDistribution", "SidecarContainers",
        "SizeMemoryBackedVolumes", "StatefulSetAutoDeletePVC", "StatefulSetStartOrdinal", "StorageCapacityScoring",
        "StorageNamespaceIndex", "StorageVersionMigrator", "StreamingCollectionEncodingToJSON",
        "StreamingCollectionEncodingToProtobuf", "StrictIPCIDRValidation", "SupplementalGroupsPolicy",
        "SystemdWatchdog", "TopologyAwareHints", "TopologyManagerPolicyAlphaOptions",
        "TopologyManagerPolicyBetaOptions", "TopologyManagerPolicyOptions", "TranslateStreamCloseWebsocketRequests",
        "UnknownVersionInteroperabilityProxy", "UserNamespacesPodSecurityStandards", "UserNamespacesSupport",
        "VolumeAttributesClass", "WindowsCPUAndMemoryAffinity", "WindowsGracefulNodeShutdown",
        "WindowsHostNetwork", "WinDSR", "WinOverlay",
        # kube_features.go (v1.33): relisted generic apiserver, apiextensions, zpages, controller-manager gates
        "AggregatedDiscoveryRemoveBetaType", "AllowParsingUserUIDFromCertAuth", "AllowUnsafeMalformedObjectDeletion",
        "AnonymousAuthConfigurableEndpoints", "APIResponseCompression", "APIServerIdentity", "APIServerTracing",
        "APIServingWithRoutine", "AuthorizeWithSelectors", "BtreeWatchCache", "CBORServingAndStorage",
        "CloudControllerManagerWebhook", "ComponentFlagz", "ComponentStatusz", "ConcurrentWatchObjectDecode",
        "ConsistentListFromCache", "CRDValidationRatcheting", "CustomResourceFieldSelectors", "KMSv1",
        "ListFromCacheSnapshot", "MutatingAdmissionPolicy", "OpenAPIEnums", "RemoteRequestHeaderUID",
        "ResilientWatchCacheInitialization", "RetryGenerateName", "SeparateCacheWatchRPC", "StorageVersionAPI",
        "StorageVersionHash", "StrictCostEnforcementForVAP", "StrictCostEnforcementForWebhooks",
        "StructuredAuthenticationConfiguration", "StructuredAuthorizationConfiguration",
        "UnauthenticatedHTTP2DOSMitigation", "WatchCacheInitializationPostStartHook",
        "WatchFromStorageWithoutResourceVersion", "WatchList",
        # the v1.35 kubelet's --feature-gates help, beyond the above
        "AllAlpha", "AllBeta", "AuthorizePodWebsocketUpgradeCreatePermission", "ClearingNominatedNodeNameAfterBinding",
        "ClientsAllowCBOR", "ClientsPreferCBOR", "CloudControllerManagerWatchBasedRoutesReconciliation",
        "ConstrainedImpersonation", "ContainerRestartRules", "ContextualLogging", "CRDObservedGenerationTracking",
        "CSIServiceAccountTokenSecrets", "DetectCacheInconsistency", "DRAConsumableCapacity",
        "DRADeviceBindingConditions", "DRADeviceTaintRules", "DRAExtendedResource", "DRASchedulerFilterTimeout",
        "EnvFiles", "GangScheduling", "GenericWorkload", "HostnameOverride", "InOrderInformers",
        "InOrderInformersBatchProcess", "InPlacePodLevelResourcesVerticalScaling",
        "InPlacePodVerticalScalingExclusiveMemory", "LoggingAlphaOptions", "LoggingBetaOptions",
        "MatchLabelKeysInPodTopologySpreadSelectorMerge", "MutablePodResourcesForSuspendedJobs",
        "MutablePVNodeAffinity", "MutableSchedulingDirectivesForSuspendedJobs", "NodeDeclaredFeatures",
        "NominatedNodeNameForExpectation", "OpportunisticBatching", "PodCertificateRequest",
        "PreventStaticPodAPIReferences", "RelaxedServiceNameValidation", "RestartAllContainersOnContainerExits",
        "SchedulerAsyncAPICalls", "SizeBasedListCostEstimate", "StatefulSetSemanticRevisionComparison",
        "StructuredAuthenticationConfigurationEgressSelector", "StructuredAuthenticationConfigurationJWKSMetrics",
        "TaintTolerationComparisonOperators", "TokenRequestServiceAccountUIDValidation",
        "UserNamespacesHostNetworkSupport", "VolumeLimitScaling", "WatchListClient",
    }
)  # fmt: skip
