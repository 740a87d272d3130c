"""Nothing ignored in silence: what a scenario holds that upstream decides by and
ledgerlet does not model is named at load, kept in ScenarioStarted, and found again for
one pod (``explain``)."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest
import yaml

from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.model.codec import convert
from ledgerlet_core.model.k8s.defaults import apply_defaults
from ledgerlet_core.model.k8s.objects import Pod
from ledgerlet_core.scenario import unmodelled
from ledgerlet_core.scenario.load import Scenario, load_scenario
from ledgerlet_core.scenario.unmodelled import spec_signature, touching

NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"memory": "8Gi"}}}


def scenario(*objects: dict[str, Any], spec: dict[str, Any] | None = None) -> Scenario:
    doc = {
        "apiVersion": "ledgerlet/v1",
        "kind": "Scenario",
        "metadata": {"name": "s"},
        "spec": {"duration": "1m", **(spec or {}), "objects": [NODE, *objects]},
    }
    return load_scenario(yaml.safe_dump(doc), "s.yaml")


def pod(name: str, **spec: Any) -> dict[str, Any]:
    meta = spec.pop("metadata", {})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", **meta},
        "spec": {"containers": [{"name": "c", "image": "pause"}], **spec},
    }


def fields(s: Scenario) -> list[tuple[str, str, str, int]]:
    return [(u.object, u.field, u.plugin, u.count) for u in s.unmodelled]


def test_dra_claims_are_named_at_load_and_kept_in_the_record() -> None:
    claims = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
    s = scenario(pod("trainer", nodeName="n1", resourceClaims=claims))
    assert fields(s) == [("Pod default/trainer", "spec.resourceClaims", "DynamicResources", 1)]
    assert any(
        w.startswith("Pod default/trainer: spec.resourceClaims: not modelled (DynamicResources)") for w in s.warnings
    )
    started = s.started_event()
    assert [u.field for u in started.unmodelled] == ["spec.resourceClaims"]
    # a field of its own in the run's record, which a reader that does not know it skips
    again = msgspec.json.decode(msgspec.json.encode(started), type=type(started))
    assert again.unmodelled == started.unmodelled


def test_volume_binding_fields() -> None:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"}}
    rwop = {
        **pvc,
        "metadata": {"name": "solo", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOncePod"], "volumeName": "pv-solo"},
    }
    pv_zone = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "pv-solo", "labels": {"topology.kubernetes.io/zone": "a"}},
        "spec": {"capacity": {"storage": "1Gi"}, "nodeAffinity": {"required": {}}},
    }
    vols = [
        {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
        {"name": "b", "persistentVolumeClaim": {"claimName": "missing"}},
        {"name": "c", "persistentVolumeClaim": {"claimName": "solo"}},
        {"name": "d", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1"}},
        {"name": "f", "configMap": {"name": "cfg"}},
    ]
    s = scenario(pvc, rwop, pv_zone, pod("db", nodeName="n1", volumes=vols))
    got = [(u.field, u.plugin) for u in s.unmodelled]
    assert got == [
        ("spec.volumes[3].ephemeral", "VolumeBinding"),
        ("spec.volumes[4].awsElasticBlockStore", "VolumeRestrictions"),
        ("spec.volumes[0].persistentVolumeClaim", "VolumeBinding"),  # not bound
        ("spec.volumes[1].persistentVolumeClaim", "VolumeBinding"),  # not in the scenario
        ("spec.volumes[2].persistentVolumeClaim", "VolumeRestrictions"),  # ReadWriteOncePod
        ("spec.volumes[2].persistentVolumeClaim", "VolumeBinding"),  # its PV's node affinity
        ("spec.volumes[2].persistentVolumeClaim", "VolumeZone"),
    ]
    assert s.unmodelled[2].claims == ["default/data"]


def test_a_bound_claim_without_topology_is_modelled() -> None:
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"volumeName": "pv1"},
    }
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {"csi": {"driver": "x"}}}
    s = scenario(
        pvc, pv, pod("db", nodeName="n1", volumes=[{"name": "a", "persistentVolumeClaim": {"claimName": "data"}}])
    )
    assert s.unmodelled == []


def test_namespace_selector_on_labels_and_other_schedulers_and_readiness_under_a_budget() -> None:
    term = {
        "labelSelector": {"matchLabels": {"app": "x"}},
        "topologyKey": "kubernetes.io/hostname",
        "namespaceSelector": {"matchLabels": {"team": "a"}},
    }
    by_name = {**term, "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}}}
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    probe = {"httpGet": {"path": "/", "port": 80}}
    s = scenario(
        pdb,
        pod("a", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}),
        pod("b", affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [by_name]}}),
        pod("c", schedulerName="my-scheduler"),
        pod("web-1", metadata={"labels": {"app": "web"}}, containers=[{"name": "c", "readinessProbe": probe}]),
        pod("other", metadata={"labels": {"app": "other"}}, containers=[{"name": "c", "readinessProbe": probe}]),
    )
    assert [(u.object, u.field, u.plugin) for u in s.unmodelled] == [
        (
            "Pod default/a",
            "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].namespaceSelector",
            "InterPodAffinity",
        ),
        ("Pod default/c", "spec.schedulerName", "my-scheduler"),
        ("Pod default/web-1", "spec.containers[0].readinessProbe", "disruption-controller"),
    ]


def test_templates_nodes_and_kinds_not_modelled() -> None:
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {
            "replicas": 2,
            "template": {"spec": {"containers": [{"name": "db"}], "resourceClaims": [{"name": "gpu"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}],
        },
    }
    down = {
        **NODE,
        "metadata": {"name": "n2"},
        "status": {**NODE["status"], "conditions": [{"type": "Ready", "status": "False"}]},
    }
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"}, "spec": {}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "shop"}}
    s = scenario(sts, down, svc, cm)
    got = [(u.object, u.field, u.plugin) for u in s.unmodelled]
    assert ("StatefulSet shop/db", "spec.template.spec.resourceClaims", "DynamicResources") in got
    assert ("StatefulSet shop/db", "spec.volumeClaimTemplates[0]", "VolumeBinding") in got
    assert ("Node n2", "status.conditions[Ready]", "node-lifecycle-controller") in got
    assert ("objects[3] Service shop/web", "kind", "PodTopologySpread") in got
    assert not any("ConfigMap" in o for o, _, _ in got)  # read by nothing that decides
    assert any("kind 'Service' is not modelled by ledgerlet (PodTopologySpread:" in w for w in s.warnings)


def test_a_logind_that_keeps_its_value_is_named_at_load() -> None:
    kubelet = {"shutdownGracePeriod": "30s", "logindInhibitDelayMax": "5s", "logindInhibitDelayMaxAfterReload": "5s"}
    s = scenario(spec={"kubeletConfig": kubelet})
    assert any(
        w.startswith(
            "node(s) n1: logindInhibitDelayMaxAfterReload: the shutdown manager fails to start (node shutdown "
            "manager was timed out after 5 attempts"
        )
        for w in s.warnings
    )
    assert s.unmodelled == []  # modelled: not an unmodelled field


def test_explain_finds_the_entries_of_one_pod() -> None:
    claims = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    s = scenario(
        pod("trainer-1", nodeName="n1", resourceClaims=claims),
        pod("trainer-2", nodeName="n1", resourceClaims=claims),
        pod("plain", nodeName="n1"),
    )
    (entry,) = s.unmodelled
    assert entry.count == 2 and entry.pods == ["default/trainer-1", "default/trainer-2"]

    def decoded(name: str, **spec: Any) -> Pod:
        made = apply_defaults(convert(pod(name, **spec), Pod))
        assert isinstance(made, Pod)
        return made

    # a pod created later from the same template is found by its spec, not its name
    later = decoded("trainer-3", resourceClaims=claims)
    assert touching(s.unmodelled, later, later.key, "n1") == [entry]
    plain = decoded("plain")
    assert touching(s.unmodelled, plain, plain.key, "n1") == []
    assert spec_signature("default", later.spec) in entry.specs


def test_the_scan_is_per_distinct_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet's pods stamped from one template: one scan, then a lookup per pod."""
    calls: list[str] = []
    real = unmodelled.spec_findings

    def counted(spec: Any, **kw: Any) -> Any:
        calls.append(kw.get("prefix", "spec."))
        return real(spec, **kw)

    monkeypatch.setattr(unmodelled, "spec_findings", counted)
    claims = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    objects = [
        pod(f"p{i}", nodeName="n1", resourceClaims=claims, metadata={"labels": {"app": "x"}}) for i in range(3000)
    ]
    s = scenario(*objects, pod("other", nodeName="n1", resourceClaims=[{"name": "fpga"}]))
    assert calls == ["spec.", "spec."]  # the 3,000 alike once, the other once
    (first,) = [u for u in s.unmodelled if u.count == 3001]
    assert len(first.pods) == 10 and len(first.specs) == 2


def test_recorded_started_event_carries_the_entries() -> None:
    s = scenario(pod("c", schedulerName="my-scheduler"))
    from ledgerlet_core.contracts.registry import make_envelope

    env = make_envelope(s.started_event(), run="r", t=0, order=[0, 0], stream="inputs")
    data = decode_data(env)
    assert [u.field for u in data.unmodelled] == ["spec.schedulerName"]
