"""Pods created after the start, as API admission left them, until a kubelet starts them.

Services that follow pods onto their nodes learn a new pod's spec from ``ObjectApplied``
or ``ObjectCreated``, what admission wrote from ``PodAdmitted``, and where it runs from
``PodStarted`` (which hands the pod over).
"""

from __future__ import annotations

from ledgerlet_core.apiserver.admission import apply_admitted
from ledgerlet_core.contracts import decisions as dec
from ledgerlet_core.model.k8s.objects import Pod


class ArrivingPods:
    def __init__(self) -> None:
        self._pods: dict[str, Pod] = {}

    def arrived(self, pod: Pod) -> None:
        self._pods[pod.key] = pod

    def admitted(self, key: str | None, data: dec.PodAdmitted) -> None:
        pod = self._pods.get(key or "")
        if pod is not None:
            self._pods[pod.key] = apply_admitted(pod, data)

    def refused(self, key: str | None) -> None:
        self._pods.pop(key or "", None)

    def started(self, key: str) -> Pod | None:
        return self._pods.pop(key, None)
