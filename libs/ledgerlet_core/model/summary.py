"""The kubelet Summary API (``stats/v1alpha1``), the shape every observation takes.

Upstream: ``staging/src/k8s.io/kubelet/pkg/apis/stats/v1alpha1/types.go``. Field names
are the API's, so a recorded ``/stats/summary`` document decodes as it is. Times are
left as the strings the API carries; ledgerlet's own clock is the event's virtual time.
"""

from __future__ import annotations

import msgspec


class _Stats(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    pass


class MemoryStats(_Stats, kw_only=True):
    time: str | None = None
    available_bytes: int | None = None
    usage_bytes: int | None = None
    working_set_bytes: int | None = None
    rss_bytes: int | None = None
    page_faults: int | None = None
    major_page_faults: int | None = None


class FsStats(_Stats, kw_only=True):
    time: str | None = None
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None


class RuntimeStats(_Stats, kw_only=True):
    image_fs: FsStats | None = None
    container_fs: FsStats | None = None


class RlimitStats(_Stats, kw_only=True):
    time: str | None = None
    maxpid: int | None = None
    curproc: int | None = None


class ContainerStats(_Stats, kw_only=True):
    name: str
    start_time: str | None = None
    memory: MemoryStats | None = None
    rootfs: FsStats | None = None
    logs: FsStats | None = None


class ProcessStats(_Stats, kw_only=True):
    process_count: int | None = msgspec.field(default=None, name="process_count")


class PodReference(_Stats, kw_only=True):
    name: str
    namespace: str
    uid: str = ""


class VolumeStats(_Stats, kw_only=True):
    name: str
    time: str | None = None
    available_bytes: int | None = None
    capacity_bytes: int | None = None
    used_bytes: int | None = None
    inodes_free: int | None = None
    inodes: int | None = None
    inodes_used: int | None = None


class PodStats(_Stats, kw_only=True):
    pod_ref: PodReference
    start_time: str | None = None
    containers: list[ContainerStats] = []
    memory: MemoryStats | None = None
    volume: list[VolumeStats] = []
    ephemeral_storage: FsStats | None = msgspec.field(default=None, name="ephemeral-storage")
    process_stats: ProcessStats | None = msgspec.field(default=None, name="process_stats")

    @property
    def key(self) -> str:
        return f"{self.pod_ref.namespace}/{self.pod_ref.name}"


class NodeStats(_Stats, kw_only=True):
    node_name: str
    system_containers: list[ContainerStats] = []
    start_time: str | None = None
    memory: MemoryStats | None = None
    fs: FsStats | None = None
    runtime: RuntimeStats | None = None
    rlimit: RlimitStats | None = None


class Summary(_Stats, kw_only=True):
    node: NodeStats
    pods: list[PodStats] = []

    def pods_container(self) -> ContainerStats | None:
        """The ``pods`` system container (the kubepods cgroup)."""
        for c in self.node.system_containers:
            if c.name == "pods":
                return c
        return None
