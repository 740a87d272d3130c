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
from ledgerlet_store.store import open_store
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
    async with await open_store(recorded) as store:
        report = await whatif_run(store, RUN, ["evictionHard.imagefs.available=10%"])
    changes = {(c.type, c.pod): c for c in report.diff.changes}
    later = changes[("PodEvicted", EVICTED)]
    assert later.change == "later" and later.recorded_t == 300 * 10**9 and later.whatif_t is not None
    assert later.whatif_t > later.recorded_t
    rec, alt = report.diff.first_pressure[("k8s-m1", "DiskPressure")]
    assert rec is not None and alt is not None and alt > rec
    assert report.open_loop_nodes == []


async def test_the_same_configuration_changes_nothing(recorded: str) -> None:
    async with await open_store(recorded) as store:
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


def test_a_saved_whatif_is_a_run_that_report_and_explain_show_beside_the_recorded_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from html.parser import HTMLParser

    dsn = sqlite_dsn(tmp_path)
    asyncio.run(record(dsn, "memory-pressure.yaml", run="mp"))
    whatif = ["whatif", "--run", "mp", "--set", "evictionHard.memory.available=1Gi", "--store", dsn]
    assert main([*whatif, "--save-as", "mp-1gi"]) == 0
    assert "saved as run mp-1gi" in " ".join(capsys.readouterr().err.split())
    assert main([*whatif, "--save-as", "mp-1gi"]) == 2  # a run id is never written twice
    assert "already holds a run 'mp-1gi'" in capsys.readouterr().err
    # settings the loops would refuse part way are refused before anything is stored
    for bad in ("scheduler.percentageOfNodesToScore=200", "controller.nodeMonitorGracePeriod=abc",
                "systemReserved.memroy=1Gi"):  # fmt: skip
        assert main(["whatif", "--run", "mp", "--set", bad, "--store", dsn, "--save-as", "bad"]) == 2, bad
        capsys.readouterr()

    assert main(["runs", "--store", dsn, "-o", "json"]) == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)}
    assert runs["mp-1gi"]["status"] == "completed" and "bad" not in runs
    # the saved run replays to exactly what it stored
    assert main(["replay", "--verify", "--run", "mp-1gi", "--store", dsn]) == 0
    capsys.readouterr()

    assert main(["explain", "api", "--run", "mp", "--compare", "mp-1gi", "--store", dsn, "-o", "json"]) == 0
    base, alt = json.loads(capsys.readouterr().out)["runs"]
    assert (base["run"], alt["run"]) == ("mp", "mp-1gi")
    assert base["outcome"]["t"] == 580 and alt["outcome"]["t"] == 550  # evicted 30 s earlier at 1Gi
    assert "memory.available<1Gi" in alt["verdict"] and "1e+03" not in alt["verdict"]
    assert main(["explain", "api", "--run", "mp", "--compare", "mp-1gi", "--store", dsn]) == 0
    side = capsys.readouterr().out
    assert "default/api, side by side" in side and "run mp-1gi" in side
    assert "what-if of run mp:" in side and "evictionHard.memory.available=1Gi" in side  # (its source)

    out = tmp_path / "side.html"
    assert main(["report", "--run", "mp", "--compare", "mp-1gi", "--store", dsn, "--out", str(out)]) == 0

    class Rows(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.rows: list[list[str]] = []
            self.inside = False

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "table":
                self.inside = ("class", "side-by-side") in attrs
            elif tag == "tr" and self.inside:
                self.rows.append([])

        def handle_endtag(self, tag: str) -> None:
            if tag == "table":
                self.inside = False

        def handle_data(self, data: str) -> None:
            if self.inside and self.rows and data.strip():
                self.rows[-1].append(data.strip())

    rows = Rows()
    rows.feed(out.read_text())
    assert rows.rows[1:] == [
        ["default/api", "PodEvicted at 14:09:40", "PodEvicted at 14:09:10", "changed"],
        ["default/cache", "PodEvicted at 14:04:00", "PodEvicted at 14:03:10", "changed"],
    ]
