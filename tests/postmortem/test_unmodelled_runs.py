"""A run whose scenario holds fields ledgerlet does not model: the record keeps them,
``explain`` shows those touching the pod, ``whatif`` refuses unless told to go on."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.app.cli import main
from ledgerlet_services.app.replay import whatif_run
from ledgerlet_services.audit.queries import Audit
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store
from tests.postmortem.conftest import sqlite_dsn

RUN = "dra"
SCENARIO = """\
apiVersion: ledgerlet/v1
kind: Scenario
metadata: {name: dra}
spec:
  duration: 30s
  objects:
    - {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: "4", memory: 8Gi}}}
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: trainer, namespace: ml}
      spec:
        replicas: 1
        template:
          metadata: {labels: {app: trainer}}
          spec:
            containers: [{name: c, resources: {requests: {cpu: 100m}}}]
            resourceClaims: [{name: gpu, resourceClaimTemplateName: gpu}]
    - apiVersion: v1
      kind: Pod
      metadata: {name: web, namespace: ml}
      spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
"""


async def _record(dsn: str) -> None:
    scenario = load_scenario(SCENARIO, "dra.yaml")
    assert [u.field for u in scenario.unmodelled] == ["spec.template.spec.resourceClaims"]
    async with await open_store(dsn) as store:
        await run_embedded(scenario, store, run=RUN)


async def _trainer(dsn: str) -> str:
    async with await open_store(dsn) as store:
        rows = await store.read_by_type(["PodScheduled"], run=RUN)
    return next(str(r.envelope.pod) for r in rows if str(r.envelope.pod).startswith("ml/trainer-"))


def test_explain_shows_what_touches_the_pod_and_whatif_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dsn = sqlite_dsn(tmp_path)
    asyncio.run(_record(dsn))
    trainer = asyncio.run(_trainer(dsn))

    async def explained(pod: str) -> list[dict[str, object]]:
        async with await open_store(dsn) as store:
            return (await Audit(store).explain(RUN, pod)).unmodelled

    (entry,) = asyncio.run(explained(trainer))  # created from the template: found by its spec
    assert entry["field"] == "spec.template.spec.resourceClaims" and entry["plugin"] == "DynamicResources"
    assert asyncio.run(explained("ml/web")) == []

    assert main(["explain", "--store", dsn, trainer]) == 1  # (1: the pod did not end in the run)
    assert "Not modelled" in capsys.readouterr().out

    async def whatif(accept: bool) -> object:
        async with await open_store(dsn) as store:
            return await whatif_run(store, RUN, ["scheduler.disablePreemption=true"], accept_unmodelled=accept)

    with pytest.raises(
        InputError, match=r"Deployment ml/trainer: spec.template.spec.resourceClaims \(DynamicResources\)"
    ):
        asyncio.run(whatif(False))
    assert asyncio.run(whatif(True)) is not None
    assert main(["whatif", "--store", dsn, "--set", "scheduler.disablePreemption=true"]) == 2
    assert "--accept-unmodelled" in capsys.readouterr().err
    assert main(["whatif", "--store", dsn, "--set", "scheduler.disablePreemption=true", "--accept-unmodelled"]) == 0
