"""The resources the facade serves and the discovery documents that announce them.

kubectl finds resources through discovery: the aggregated form
(``apidiscovery.k8s.io/v2`` ``APIGroupDiscoveryList`` on ``/api`` and ``/apis``, what
kubectl 1.30+ asks for first) or the legacy one (``APIVersions``, ``APIGroupList``,
one ``APIResourceList`` per group version). Both are served; every resource has the
verbs get, list and watch only (the reviews a client asks about itself, create only), so
a client that reads discovery knows that nothing here can be changed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

#: what discovery says the server is (``/version``): the Kubernetes ledgerlet models
KUBERNETES_VERSION: Final = {"major": "1", "minor": "34", "gitVersion": "v1.34.0"}

READ_VERBS: Final = ["get", "list", "watch"]
#: the reviews a client asks about itself: created (POST) and answered, never stored
CREATE_ONLY: Final = ("create",)

AGGREGATED_V2: Final = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
AGGREGATED_V2BETA1: Final = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"


@dataclass(frozen=True, slots=True)
class Resource:
    name: str
    kind: str
    group: str
    version: str
    namespaced: bool
    singular: str
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    #: subresources served (read: the object itself)
    subresources: tuple[str, ...] = ()
    #: what may be done with it: read (get, list, watch), or create-only for the reviews
    verbs: tuple[str, ...] = tuple(READ_VERBS)

    @property
    def group_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def api_resource(self) -> dict[str, Any]:
        """One entry of a legacy ``APIResourceList``."""
        out: dict[str, Any] = {
            "name": self.name,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            out["shortNames"] = list(self.short_names)
        if self.categories:
            out["categories"] = list(self.categories)
        return out


RESOURCES: Final = (
    Resource("namespaces", "Namespace", "", "v1", False, "namespace", ("ns",), subresources=("status",)),
    Resource("nodes", "Node", "", "v1", False, "node", ("no",), subresources=("status",)),
    Resource("pods", "Pod", "", "v1", True, "pod", ("po",), ("all",), subresources=("status",)),
    Resource("events", "Event", "", "v1", True, "event", ("ev",)),
    Resource("resourcequotas", "ResourceQuota", "", "v1", True, "resourcequota", ("quota",), subresources=("status",)),
    Resource("events", "Event", "events.k8s.io", "v1", True, "event", ("ev",)),
    Resource("poddisruptionbudgets", "PodDisruptionBudget", "policy", "v1", True, "poddisruptionbudget", ("pdb",)),
    Resource("priorityclasses", "PriorityClass", "scheduling.k8s.io", "v1", False, "priorityclass", ("pc",)),
    Resource("runtimeclasses", "RuntimeClass", "node.k8s.io", "v1", False, "runtimeclass"),
    Resource("leases", "Lease", "coordination.k8s.io", "v1", True, "lease"),
    # workloads, as the run stored them (their status from the pods at the instant: workloads.py)
    Resource("deployments", "Deployment", "apps", "v1", True, "deployment", ("deploy",), ("all",), ("status",)),
    Resource("replicasets", "ReplicaSet", "apps", "v1", True, "replicaset", ("rs",), ("all",), ("status",)),
    Resource("daemonsets", "DaemonSet", "apps", "v1", True, "daemonset", ("ds",), ("all",), ("status",)),
    Resource("statefulsets", "StatefulSet", "apps", "v1", True, "statefulset", ("sts",), ("all",), ("status",)),
    Resource("jobs", "Job", "batch", "v1", True, "job", (), ("all",), ("status",)),
    # what each node and pod used, from the run's observations (metrics.py), as metrics-server serves it
    Resource("nodes", "NodeMetrics", "metrics.k8s.io", "v1beta1", False, "nodemetrics"),
    Resource("pods", "PodMetrics", "metrics.k8s.io", "v1beta1", True, "podmetrics"),
    # who am I, and what may I do (reviews.py): read-only truths
    Resource(
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        "authorization.k8s.io",
        "v1",
        False,
        "selfsubjectaccessreview",
        verbs=CREATE_ONLY,
    ),
    Resource(
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        "authorization.k8s.io",
        "v1",
        True,
        "selfsubjectrulesreview",
        verbs=CREATE_ONLY,
    ),
    Resource(
        "selfsubjectreviews",
        "SelfSubjectReview",
        "authentication.k8s.io",
        "v1",
        False,
        "selfsubjectreview",
        verbs=CREATE_ONLY,
    ),
)

#: the API groups beyond the core one, each with its one version
GROUP_VERSIONS: Final = {
    "events.k8s.io": "v1",
    "policy": "v1",
    "scheduling.k8s.io": "v1",
    "node.k8s.io": "v1",
    "coordination.k8s.io": "v1",
    "apps": "v1",
    "batch": "v1",
    "metrics.k8s.io": "v1beta1",
    "authorization.k8s.io": "v1",
    "authentication.k8s.io": "v1",
}
GROUPS: Final = tuple(GROUP_VERSIONS)


def find(group: str, version: str, name: str) -> Resource | None:
    return next((r for r in RESOURCES if (r.group, r.version, r.name) == (group, version, name)), None)


def group_versions() -> dict[str, list[Resource]]:
    out: dict[str, list[Resource]] = {}
    for r in RESOURCES:
        out.setdefault(r.group_version, []).append(r)
    return out


def version_info() -> dict[str, Any]:
    return {
        **KUBERNETES_VERSION,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "ledgerlet",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _group(name: str) -> dict[str, Any]:
    version = GROUP_VERSIONS[name]
    gv = {"groupVersion": f"{name}/{version}", "version": version}
    return {"name": name, "versions": [gv], "preferredVersion": gv}


def api_group_list() -> dict[str, Any]:
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": [_group(g) for g in GROUPS]}


def api_group(name: str) -> dict[str, Any] | None:
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(name)} if name in GROUPS else None


def api_resource_list(group_version: str) -> dict[str, Any] | None:
    found = group_versions().get(group_version)
    if found is None:
        return None
    resources: list[dict[str, Any]] = []
    for r in found:
        resources.append(r.api_resource())
        for sub in r.subresources:
            resources.append(
                {
                    "name": f"{r.name}/{sub}",
                    "singularName": "",
                    "namespaced": r.namespaced,
                    "kind": r.kind,
                    "verbs": ["get"],
                }
            )
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}


def _discovery_resource(r: Resource) -> dict[str, Any]:
    out: dict[str, Any] = {
        "resource": r.name,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.singular,
        "verbs": list(r.verbs),
    }
    if r.short_names:
        out["shortNames"] = list(r.short_names)
    if r.categories:
        out["categories"] = list(r.categories)
    if r.subresources:
        out["subresources"] = [
            {
                "subresource": s,
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "verbs": ["get"],
            }
            for s in r.subresources
        ]
    return out


def aggregated_discovery(legacy: bool, api_version: str = "apidiscovery.k8s.io/v2") -> dict[str, Any]:
    """``/api`` (``legacy``: the core group) or ``/apis`` as one ``APIGroupDiscoveryList``."""
    names = [""] if legacy else list(GROUPS)
    items = []
    for name in names:
        members = [r for r in RESOURCES if r.group == name]
        items.append(
            {
                "metadata": {"name": name, "creationTimestamp": None},
                "versions": [
                    {
                        "version": GROUP_VERSIONS.get(name, "v1"),
                        "resources": [_discovery_resource(r) for r in members],
                        "freshness": "Current",
                    }
                ],
            }
        )
    return {"kind": "APIGroupDiscoveryList", "apiVersion": api_version, "metadata": {}, "items": items}


def wants_aggregated(accept: str) -> str | None:
    """The aggregated-discovery media type the client asks for first, if any."""
    for part in accept.split(","):
        media = part.strip().replace(" ", "")
        if "as=APIGroupDiscoveryList" in media and "g=apidiscovery.k8s.io" in media:
            if "v=v2beta1" in media:
                return AGGREGATED_V2BETA1
            if "v=v2" in media:
                return AGGREGATED_V2
    return None
