"""The out-of-service controller loop, driven by hand: a powered-off node goes Unknown,
its pods are deleted by taint eviction, and PodGC force-deletes them once the
out-of-service taint is there."""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_services.loops.out_of_service import OutOfServiceController

from .harness import Drive, node, pod, timers, types


def test_a_lost_node_is_tainted_its_pods_deleted_then_force_deleted_out_of_service() -> None:
    d = Drive(OutOfServiceController())
    d.input(
        inp.ScenarioStarted(
            name="s", start="1970-01-01T00:00:00Z", duration=600, controller_config={"nodeMonitorGracePeriod": "40s"}
        )
    )
    d.apply(node("n1"))
    d.apply(pod("web", "n1"))
    off = d.input(inp.NodePoweredOff(node="n1"), 12, node="n1")
    assert timers(off) == [(55.0, 0)]  # last status at 10 s + 40 s, the next 5 s monitor pass
    unknown = d.tick(55)
    assert types(unknown) == ["NodeConditionChanged", "NodeTaintAdded", "NodeTaintAdded", "PodDeletionRequested"]
    oos = inp.NodeTainted(node="n1", key="node.kubernetes.io/out-of-service", value="nodeshutdown", effect="NoExecute")
    d.input(oos, 58, node="n1")
    gc = d.tick(60)
    forced = [e for e in gc if e.type == "PodForceDeleted"]
    assert [e.pod for e in forced] == ["default/web"]
    assert msgspec.json.decode(forced[0].data)["reason"] == "out-of-service"
    assert forced[0].causes == [unknown[-1].id]  # it follows from the deletion it finishes
