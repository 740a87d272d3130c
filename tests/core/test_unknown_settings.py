"""No setting is silently ignored: a name that is no setting is an input error with the
closest one suggested (a misspelt kubeletConfig field once took a run from 10 decisions
to 7 without a word); a real KubeletConfiguration field ledgerlet does not model is
accepted with a warning, as recorded configurations hold dozens; unknown fields of
Kubernetes objects stay ignored, as the API server ignores them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ledgerlet_core.kubelet.config import resolve_kubelet_config
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.postmortem.overrides import apply_overrides
from ledgerlet_core.scenario.documents import read_document
from ledgerlet_core.scenario.load import load_scenario
from tests.conftest import EXAMPLES


def _scenario(**spec: Any) -> dict[str, Any]:
    path = EXAMPLES / "memory-pressure.yaml"
    doc = dict(read_document(path.read_text(), str(path)))
    doc["spec"] = {**doc["spec"], **spec}
    return doc


def _load(doc: dict[str, Any]) -> Any:
    return load_scenario(json.dumps(doc), "s.yaml")


@pytest.mark.parametrize(
    ("spec", "field", "said"),
    [
        ({"kubeletConfig": {"evictionHrad": {"memory.available": "1Gi"}}}, "kubeletConfig.evictionHrad",
         "unknown KubeletConfiguration field 'evictionHrad'; did you mean 'evictionHard'?"),
        ({"kubeletConfig": {"evictionhard": {}}}, "kubeletConfig.evictionhard", "did you mean 'evictionHard'?"),
        ({"kubeletConfig": {"featureGates": {"GracefulNodeShutdwn": True}}}, "featureGates.GracefulNodeShutdwn",
         "unrecognized feature gate: GracefulNodeShutdwn; did you mean 'GracefulNodeShutdown'?"),
        ({"schedulerConfig": {"disablePremption": True}}, "schedulerConfig.disablePremption",
         "unknown schedulerConfig field 'disablePremption'; did you mean 'disablePreemption'?"),
        ({"controllerConfig": {"nodeMonitorGracePerod": "20s"}}, "controllerConfig.nodeMonitorGracePerod",
         "did you mean 'nodeMonitorGracePeriod'?"),
        ({"kubeletConfig": {"zzz": 1}}, "kubeletConfig.zzz", "unknown KubeletConfiguration field 'zzz'"),
    ],
)  # fmt: skip
def test_a_misspelt_setting_is_refused_with_the_closest_name(spec: dict[str, Any], field: str, said: str) -> None:
    with pytest.raises(InputError) as err:
        _load(_scenario(**spec))
    assert err.value.field is not None and err.value.field.endswith(field)
    assert said in str(err.value)


def test_a_real_upstream_field_ledgerlet_does_not_model_is_accepted_and_said() -> None:
    scenario = _load(_scenario(kubeletConfig={"clusterDNS": ["10.96.0.10"], "cgroupDriver": "systemd", "maxPods": 50}))
    assert any(w.startswith("kubeletConfig.clusterDNS: a KubeletConfiguration field ledgerlet does not model")
               for w in scenario.warnings)  # fmt: skip
    assert any(w.startswith("kubeletConfig.cgroupDriver") for w in scenario.warnings)
    assert not any("maxPods" in w for w in scenario.warnings)


def test_a_node_annotation_is_checked_as_the_scenario_section_is() -> None:
    doc = _scenario()
    node = doc["spec"]["objects"][0]
    node["metadata"]["annotations"] = {"ledgerlet/kubelet-config": json.dumps({"evictionSotf": {}})}
    with pytest.raises(InputError) as err:
        _load(doc)
    assert "did you mean 'evictionSoft'?" in str(err.value) and err.value.obj == "objects[0] Node worker-1"
    node["metadata"]["annotations"] = {"ledgerlet/kubelet-config": json.dumps({"podPidsLimit": 100})}
    assert any("podPidsLimit: a KubeletConfiguration field" in w for w in _load(doc).warnings)


def test_an_unknown_top_level_field_stays_a_warning_with_a_suggestion() -> None:
    scenario = _load(_scenario(evnts=[]))
    assert "spec.evnts: unknown field, ignored; did you mean 'events'?" in scenario.warnings


def test_unknown_fields_of_kubernetes_objects_stay_ignored() -> None:
    doc = _scenario()
    doc["spec"]["objects"][2]["spec"]["someFutureField"] = {"x": 1}
    assert _load(doc).objects


CONFIGS: dict[str, dict[str, Any]] = {"kubeletConfig": {}, "schedulerConfig": {}, "controllerConfig": {}}


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        (
            "evictionHrad.memory.available=1Gi",
            "unknown kubeletConfig field 'evictionHrad'; did you mean 'evictionHard'?",
        ),
        ("scheduler.disablePremption=true", "unknown schedulerConfig field 'disablePremption'; did you mean"),
        ("controller.terminatedPodGcThreshold=5", "did you mean 'terminatedPodGCThreshold'?"),
        ("schedular.disablePreemption=true", "did you mean 'scheduler.'?"),
        ("clusterDNS=[1.2.3.4]", "clusterDNS is a KubeletConfiguration field ledgerlet does not model"),
    ],
)
def test_whatif_set_refuses_what_would_change_nothing(assignment: str, said: str) -> None:
    with pytest.raises(InputError) as err:
        apply_overrides(CONFIGS, [assignment])
    assert said in str(err.value) and err.value.obj == "--set"


def test_whatif_config_files_are_checked_too() -> None:
    with pytest.raises(InputError, match="did you mean 'kubeletConfig'"):
        apply_overrides(CONFIGS, [], {"kubeletConfg": {"maxPods": 5}})
    with pytest.raises(InputError, match="did you mean 'podMaxBackoffSeconds'"):
        apply_overrides(CONFIGS, [], {"schedulerConfig": {"podMaxBackofSeconds": 5}})
    with pytest.raises(InputError, match="did you mean 'evictionSoft'"):
        apply_overrides(CONFIGS, [], {"evictionSotf": {}})
    done = apply_overrides(CONFIGS, ["evictionHard.memory.available=1Gi", "scheduler.disablePreemption=true"])
    assert done["kubeletConfig"]["evictionHard"]["memory.available"] == "1Gi"
    assert done["schedulerConfig"] == {"disablePreemption": True}


@pytest.mark.parametrize(
    ("spec", "warned"),
    [
        ({"kubeletConfig": {"featureGates": {"RotateKubeletServerCertificate": True, "GracefulNodeShutdown": True}}},
         "kubeletConfig.featureGates.RotateKubeletServerCertificate: a feature gate ledgerlet does not model"),
        ({"schedulerConfig": {"featureGates": {"SchedulerAsyncPreemption": False}}},
         "schedulerConfig.featureGates.SchedulerAsyncPreemption: a feature gate ledgerlet does not model"),
        ({"controllerConfig": {"featureGates": {"SeparateTaintEvictionController": True}}},
         "controllerConfig.featureGates.SeparateTaintEvictionController: a feature gate ledgerlet does not model"),
        ({"kubeletConfig": {"systemReserved": {"memory": "1Gi", "pid": "1000"}}},
         "kubeletConfig.systemReserved.pid: a reservation ledgerlet does not model"),
    ],
)  # fmt: skip
def test_a_real_gate_or_reservation_ledgerlet_does_not_read_is_accepted_and_said(
    spec: dict[str, Any], warned: str
) -> None:
    warnings = _load(_scenario(**spec)).warnings
    assert any(w.startswith(warned) for w in warnings), warnings
    assert not any("GracefulNodeShutdown:" in w or "memory" in w for w in warnings)  # modelled: no word


@pytest.mark.parametrize(
    ("spec", "field", "said"),
    [
        ({"kubeletConfig": {"featureGates": {"RotateKubeletServerCertficate": True}}},
         "kubeletConfig.featureGates.RotateKubeletServerCertficate",
         "unrecognized feature gate: RotateKubeletServerCertficate; did you mean 'RotateKubeletServerCertificate'?"),
        ({"schedulerConfig": {"featureGates": {"SchedulerAsyncPremption": True}}},
         "schedulerConfig.featureGates.SchedulerAsyncPremption", "did you mean 'SchedulerAsyncPreemption'?"),
        ({"controllerConfig": {"featureGates": {"NoSuchGateAtAll": True}}},
         "controllerConfig.featureGates.NoSuchGateAtAll", "unrecognized feature gate: NoSuchGateAtAll"),
        ({"kubeletConfig": {"systemReserved": {"memroy": "1Gi"}}}, "systemReserved.memroy",
         'cannot reserve "memroy" resource; did you mean \'memory\'?'),
        ({"kubeletConfig": {"kubeReserved": {"hugepages-2Mi": "1Gi"}}}, "kubeReserved.hugepages-2Mi",
         'cannot reserve "hugepages-2Mi" resource'),
    ],
)  # fmt: skip
def test_a_misspelt_gate_or_reservation_is_refused_with_the_closest_name(
    spec: dict[str, Any], field: str, said: str
) -> None:
    with pytest.raises(InputError) as err:
        _load(_scenario(**spec))
    assert err.value.field is not None and err.value.field.endswith(field)
    assert said in str(err.value)


def test_a_node_annotation_gate_is_checked_too() -> None:
    doc = _scenario()
    annotations = doc["spec"]["objects"][0]["metadata"].setdefault("annotations", {})
    annotations["ledgerlet/kubelet-config"] = json.dumps({"featureGates": {"KubeletPSI": True}})
    assert any("featureGates.KubeletPSI: a feature gate" in w for w in _load(doc).warnings)
    annotations["ledgerlet/kubelet-config"] = json.dumps({"featureGates": {"KubeletPSi": True}})
    with pytest.raises(InputError, match="did you mean 'KubeletPSI'"):
        _load(doc)


def test_a_stored_configuration_with_a_real_unmodelled_gate_still_resolves() -> None:
    config = resolve_kubelet_config({"featureGates": {"RotateKubeletServerCertificate": False}})
    assert "RotateKubeletServerCertificate" not in config.feature_gates and config.gate("GracefulNodeShutdown")
    with pytest.raises(InputError, match="unrecognized feature gate: Bogus"):
        resolve_kubelet_config({"featureGates": {"Bogus": False}})


@pytest.mark.parametrize(
    ("assignment", "said"),
    [
        ("featureGates.RotateKubeletServerCertificate=false",
         "RotateKubeletServerCertificate is a feature gate ledgerlet does not model"),
        ("featureGates.GracefulNodeShutdwn=false",
         "unrecognized feature gate: GracefulNodeShutdwn; did you mean 'GracefulNodeShutdown'?"),
        ('featureGates={"PodLevelResources": false, "KubeletPSI": true}', "KubeletPSI is a feature gate"),
        ("scheduler.featureGates.SchedulerAsyncPreemption=false", "SchedulerAsyncPreemption is a feature gate"),
        ("controller.featureGates.SeparateTaintEvictionControler=false",
         "did you mean 'SeparateTaintEvictionController'?"),
    ],
)  # fmt: skip
def test_whatif_refuses_a_gate_nothing_reads(assignment: str, said: str) -> None:
    with pytest.raises(InputError) as err:
        apply_overrides(CONFIGS, [assignment])
    assert said in str(err.value) and err.value.obj == "--set"


def test_whatif_sets_a_modelled_gate_and_checks_gates_in_a_config_file() -> None:
    done = apply_overrides(CONFIGS, ["featureGates.GracefulNodeShutdown=false"])
    assert done["kubeletConfig"]["featureGates"] == {"GracefulNodeShutdown": False}
    with pytest.raises(InputError, match="did you mean 'PodLevelResources'"):
        apply_overrides(CONFIGS, [], {"featureGates": {"PodLevelResource": False}})
    with pytest.raises(InputError, match="KubeletPSI is a feature gate ledgerlet does not model"):
        apply_overrides(CONFIGS, [], {"kubeletConfig": {"featureGates": {"KubeletPSI": True}}})
