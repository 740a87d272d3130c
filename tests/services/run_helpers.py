"""Running scenarios in tests, the way `ledgerlet run` does."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import RunResult, run_embedded
from ledgerlet_store.store import open_store


async def run_file(
    path: Path, store_dsn: str, *, run: str | None = None, order_scheme: str = ""
) -> tuple[list[dict[str, Any]], RunResult]:
    """(``order_scheme``: as ``ledgerlet run --order-by-node`` sets it, contracts/order.py)"""
    scenario = dataclasses.replace(load_scenario(path.read_text(), str(path)), order_scheme=order_scheme)
    store = await open_store(store_dsn)
    try:
        result = await run_embedded(scenario, store, run=run)
    finally:
        await store.close()
    text = encode_records(to_records([d.envelope for d in result.decisions], scenario.start))
    return [json.loads(line) for line in text.splitlines()], result


def normalized(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with ids (and ids in causes) replaced by stable labels, for comparing runs."""
    labels: dict[str, str] = {}

    def label(i: str) -> str:
        return labels.setdefault(i, f"#{len(labels)}")

    out = []
    for r in records:
        r = dict(r)
        r["id"] = label(r["id"])
        r["causes"] = [label(c) for c in r.get("causes", [])]
        out.append(r)
    return out
