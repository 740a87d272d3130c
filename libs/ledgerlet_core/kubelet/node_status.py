"""What the kubelet publishes in node status, and the taints the control plane derives.

Upstream: ``pkg/kubelet/cm/node_container_manager_linux.go:
GetNodeAllocatableReservation`` and ``hardEvictionReservation`` (allocatable =
capacity − systemReserved − kubeReserved − the hard eviction threshold for memory and
ephemeral storage), ``pkg/kubelet/nodestatus/setters.go: MachineInfo`` (pods capacity
from maxPods / podsPerCore), and the node lifecycle controller's taint-by-condition
(``pkg/controller/nodelifecycle``: ``node.kubernetes.io/memory-pressure`` etc.).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.eviction.signals import DISK_PRESSURE, MEMORY_PRESSURE, PID_PRESSURE, Signal
from ledgerlet_core.kubelet.eviction.thresholds import Threshold, effective_eviction_hard, parse_threshold_config
from ledgerlet_core.model.k8s.objects import ResourceList, Taint
from ledgerlet_core.model.k8s.taints import (
    NO_SCHEDULE,
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_PID_PRESSURE,
)
from ledgerlet_core.model.quantity import Format, Quantity

CONDITION_TAINTS: Final[dict[str, str]] = {
    MEMORY_PRESSURE: TAINT_NODE_MEMORY_PRESSURE,
    DISK_PRESSURE: TAINT_NODE_DISK_PRESSURE,
    PID_PRESSURE: TAINT_NODE_PID_PRESSURE,
}


#: the kubelet's ``maxPods`` when nothing says otherwise
DEFAULT_MAX_PODS: Final = 110


def status_capacity(capacity: Mapping[str, Quantity], config: KubeletConfig) -> ResourceList:
    """The node's capacity as the kubelet reports it: ``pods`` from maxPods (and podsPerCore).

    A recorded Node tells what its kubelet publishes: its declared ``capacity.pods`` is
    that kubelet's maxPods unless maxPods is given for the node (scenario spec §1)."""
    out = dict(capacity)
    declared = capacity.get("pods")
    if config.spec.max_pods is not None:
        pods = config.spec.max_pods
    elif declared is not None:
        pods = declared.value()
    else:
        pods = DEFAULT_MAX_PODS
    cpu = capacity.get("cpu")
    if config.spec.pods_per_core > 0 and cpu is not None:
        pods = min(pods, (cpu.milli_value() // 1000) * config.spec.pods_per_core)
    out["pods"] = Quantity.from_int(pods, Format.DECIMAL_SI)
    return dict(sorted(out.items()))


def hard_eviction_reservation(config: KubeletConfig, capacity: Mapping[str, Quantity]) -> ResourceList:
    """``hardEvictionReservation``: hard memory.available and nodefs.available thresholds."""
    found = _HARD.get(id(config))
    if found is None or found[0] is not config:  # (parsed once per configuration: every node asks)
        if len(_HARD) >= 1024:
            _HARD.clear()
        found = _HARD[id(config)] = (config, parse_threshold_config([], _hard_only(config), {}, {}, {}))
    hard = found[1]
    out: ResourceList = {}
    for t in hard:
        if t.signal == Signal.MEMORY_AVAILABLE and "memory" in capacity:
            out["memory"] = t.value.resolve(capacity["memory"])
        elif t.signal == Signal.NODEFS_AVAILABLE and "ephemeral-storage" in capacity:
            out["ephemeral-storage"] = t.value.resolve(capacity["ephemeral-storage"])
    return out


_HARD: dict[int, tuple[KubeletConfig, list[Threshold]]] = {}


def _hard_only(config: KubeletConfig) -> dict[str, str]:
    return effective_eviction_hard(
        config.spec.eviction_hard, merge_defaults=config.spec.merge_default_eviction_settings
    )


def allocatable(capacity: Mapping[str, Quantity], config: KubeletConfig) -> ResourceList:
    """capacity − (systemReserved + kubeReserved + hard eviction reservation), never below 0."""
    eviction = hard_eviction_reservation(config, capacity)
    out: ResourceList = {}
    for name, cap in capacity.items():
        reserved = sum(
            (r[name].nanos for r in (config.spec.system_reserved, config.spec.kube_reserved, eviction) if name in r),
            0,
        )
        out[name] = Quantity(max(cap.nanos - reserved, 0), cap.format)  # Sub keeps the capacity's format
    return out


def reported_capacity(
    declared: Mapping[str, Quantity], machine: Mapping[str, int], config: KubeletConfig
) -> ResourceList:
    """What the kubelet reports as capacity: the Node object's, with the machine's memory
    and root filesystem where a ``usage`` entry declares them, and ``pods`` from maxPods."""
    cap = dict(declared)
    if "memory" in machine:
        cap["memory"] = Quantity.bytes(machine["memory"])
    if "nodefs" in machine:
        cap["ephemeral-storage"] = Quantity.bytes(machine["nodefs"])
    return status_capacity(cap, config)


def condition_taints(conditions: Iterable[str]) -> list[Taint]:
    """NoSchedule taints for the pressure conditions a node reports True."""
    return [Taint(key=CONDITION_TAINTS[c], effect=NO_SCHEDULE) for c in conditions if c in CONDITION_TAINTS]
