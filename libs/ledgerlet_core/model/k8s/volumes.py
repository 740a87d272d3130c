"""Which of a pod's volumes are local ephemeral storage (``pkg/kubelet/eviction/helpers.go``)."""

from __future__ import annotations

from ledgerlet_core.model.k8s.objects import Pod, Volume


def local_volume_names(pod: Pod) -> list[str]:
    """``localVolumeNames``: hostPath, and emptyDir/gitRepo/configMap not backed by memory."""
    return [v.name for v in pod.spec.volumes if is_local_volume(v)]


def is_local_volume(v: Volume) -> bool:
    if v.host_path is not None or v.git_repo is not None or v.config_map is not None:
        return True
    return v.empty_dir is not None and v.empty_dir.medium != "Memory"
