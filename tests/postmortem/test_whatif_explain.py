"""``ledgerlet whatif`` and ``ledgerlet explain`` on a recorded run."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.postmortem.overrides import apply_overrides, parse_assignment
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import whatif_run
from ledgerlet_store.store import EventStore
from tests.postmortem.conftest import EVICTED, RUN, record, sqlite_dsn


def test_set_changes_one_key_and_keeps_the_effective_others() -> None:
    out = apply_overrides({"kubeletConfig": {}}, ["evictionHard.memory.available=500Mi", "housekeepingInterval=5s"])
    assert out["kubeletConfig"]["evictionHard"] == {
        "memory.available": "500Mi",  # upstream's other defaults stay: one threshold changed, not all dropped
        "nodefs.available": "10%",
        "nodefs.inodesFree": "5%",
        "imagefs.available": "15%",
        "imagefs.inodesFree": "5%",
    }
    replaced = apply_overrides({"kubeletConfig": {}}, ['evictionHard={"memory.available": "1Gi"}'])
    assert replaced["kubeletConfig"]["evictionHard"] == {"memory.available": "1Gi"}
    assert parse_assignment("scheduler.disablePreemption=true") == ("scheduler", "disablePreemption", None, True)
    with pytest.raises(InputError, match="not a map field"):
        parse_assignment("housekeepingInterval.x=1")
    with pytest.raises(InputError, match="FIELD=VALUE"):
        parse_assignment("evictionHard")


async def test_a_lower_threshold_delays_the_eviction(recorded: str) -> None:
    async with await EventStore.open(recorded) as store:
        report = await whatif_run(store, RUN, ["evictionHard.imagefs.available=10%"])
    changes = {(c.type, c.pod): c for c in report.diff.changes}
    later = changes[("PodEvicted", EVICTED)]
    assert later.change == "later" and later.recorded_t == 300 * 10**9 and later.whatif_t is not None
    assert later.whatif_t > later.recorded_t
    rec, alt = report.diff.first_pressure[("k8s-m1", "DiskPressure")]
    assert rec is not None and alt is not None and alt > rec
    assert report.open_loop_nodes == []


async def test_the_same_configuration_changes_nothing(recorded: str) -> None:
    async with await EventStore.open(recorded) as store:
        report = await whatif_run(store, RUN, ["evictionPressureTransitionPeriod=5m"])
    assert report.diff.same, [c.describe() for c in report.diff.changes]


def test_whatif_cli(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn))
    assert main(["whatif", "--store", dsn, "--set", "evictionHard.imagefs.available=5%", "--json"]) == 0
    body = json.loads(capsys.readouterr().out)
    evicted = [c for c in body["changes"] if c["type"] == "PodEvicted" and c["pod"] == EVICTED]
    assert evicted and evicted[0]["change"] in ("no longer", "later")
    assert main(["whatif", "--store", dsn, "--set", "evictionHard.memory.available=lots"]) == 2
    assert "evictionHard" in capsys.readouterr().err
    config = tmp_path / "k.yaml"
    config.write_text("evictionHard: {imagefs.available: 10%}\n")
    assert main(["whatif", "--store", dsn, "--config", str(config)]) == 0
    assert "later" in capsys.readouterr().out


def test_explain_cli(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    import asyncio
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn))
    assert main(["explain", EVICTED, "--store", dsn]) == 0
    text = capsys.readouterr().out
    assert "was evicted from k8s-m1 at 300s" in text
    assert "imagefs.available<15%" in text and "ranked 1st of 8" in text
    assert "DiskPressure=True" in text and "GarbageCollectContainers" in text  # reclaim came first
    assert "immediate grace period" in text
    assert main(["explain", "kube-system/kube-proxy-dlw8r", "--store", dsn]) == 1  # never ended
    assert main(["explain", "not-a-pod", "--store", dsn]) == 2


def test_explain_says_why_a_pod_ranked_above_was_spared(tmp_path: object, capsys: pytest.CaptureFixture[str]) -> None:
    """memory-pressure example: kube-proxy (system-node-critical) ranks first at 580 s but
    the kubelet does not evict critical pods, so default/api goes."""
    import asyncio
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn, "memory-pressure.yaml", run="mp"))
    assert main(["explain", "default/api", "--store", dsn, "--run", "mp"]) == 0
    text = capsys.readouterr().out
    assert "ranked 2nd of 3" in text
    assert "Ranked above it: kube-system/kube-proxy-worker-1" in text and "does not evict critical pods" in text


@pytest.mark.parametrize(
    "command",
    [["explain", "default/api"], ["replay"], ["report", "--out", "r.html"], ["runs"], ["whatif", "--set", "maxPods=5"]],
)
def test_read_commands_never_create_a_store(
    tmp_path: object, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """A mistyped path used to become an empty store (with no runs to read)."""
    from pathlib import Path

    assert isinstance(tmp_path, Path)
    missing = tmp_path / "typo.db"
    assert main([*command, "--store", f"sqlite:///{missing}"]) == 2
    said = capsys.readouterr()
    assert f"no store at {missing}" in " ".join(said.err.split()) and not said.out  # errors: stderr only
    assert not missing.exists()


def test_whatif_refuses_a_misspelt_setting_before_running(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn, "memory-pressure.yaml", run="mp"))
    assert main(["whatif", "--set", "evictionHrad.memory.available=1Gi", "--store", dsn]) == 2
    said = capsys.readouterr()
    assert not said.out
    assert "unknown kubeletConfig field 'evictionHrad'; did you mean 'evictionHard'?" in " ".join(said.err.split())
