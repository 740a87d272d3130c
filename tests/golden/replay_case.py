"""Running one golden case: the decision log exactly as ``ledgerlet run`` writes it."""

from __future__ import annotations

from pathlib import Path

from ledgerlet_bus.memory import MemoryBus
from ledgerlet_core.contracts.decision_log import encode_records, to_records
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_services.runtime.embedded import run_embedded
from ledgerlet_store.store import open_store

from .cases import RUN_ID, cases


async def decision_log(name: str, workdir: Path, *, bus: MemoryBus | None = None) -> bytes:
    """(``bus``: the in-memory bus to run on, for a test that watches it)"""
    text, source = cases()[name]()
    scenario = load_scenario(text, source)
    store = await open_store(f"sqlite:///{workdir / f'{name}.db'}")
    try:
        result = await run_embedded(scenario, store, run=RUN_ID, bus=bus)
    finally:
        await store.close()
    return encode_records(to_records([d.envelope for d in result.decisions], scenario.start))
