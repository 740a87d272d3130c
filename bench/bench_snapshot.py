"""What a snapshot of a fleet's state costs, per control loop, against folding the records.

The fleet (``fleet.py``: nodes x 110 bound pods, two minutes) is run embedded on an
in-memory bus that keeps every record; then each loop's records (all but the run's end,
so the run is under way) are folded into a fresh runner, and its state is pickled and
compressed as a checkpoint is, then loaded again. Reported per loop: records, the fold's
seconds, the snapshot's size, and the seconds to take and to load it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).parent))

from fleet import write  # noqa: E402
from ledgerlet_bus.memory import MemoryBus  # noqa: E402
from ledgerlet_core.contracts.envelope import decode_envelope  # noqa: E402
from ledgerlet_core.scenario.load import Scenario, load_scenario  # noqa: E402
from ledgerlet_services.runtime.catalog import CONTROL_LOOPS  # noqa: E402
from ledgerlet_services.runtime.embedded import run_embedded  # noqa: E402
from ledgerlet_services.runtime.shell import ServiceRunner  # noqa: E402
from ledgerlet_services.runtime.snapshot_codec import capture, manifest, restore  # noqa: E402
from ledgerlet_store.store import open_store  # noqa: E402


async def measure(scenario: Scenario, db: Path) -> None:
    store = await open_store(f"sqlite:///{db}")
    bus = MemoryBus(retain=True)
    try:
        await run_embedded(scenario, store, bus=bus, run="snapshot")
    finally:
        await store.close()
    for kind in CONTROL_LOOPS:
        records = [
            r for r in await bus.history(kind.name, kind.topics) if decode_envelope(r.value).type != "ScenarioEnded"
        ]
        runner = ServiceRunner(MemoryBus(), kind, group=f"bench-{kind.name}")
        began = time.perf_counter()
        runner.handle_records(records)
        fold = time.perf_counter() - began
        began = time.perf_counter()
        blob = capture(runner.state(), manifest())
        take = time.perf_counter() - began
        began = time.perf_counter()
        restore(blob)
        load = time.perf_counter() - began
        print(
            f"{kind.name:26} {len(records):7,} records folded in {fold:5.2f} s; snapshot "
            f"{len(blob) / 2**20:5.1f} MiB, taken in {take:5.2f} s, loaded in {load:5.2f} s",
            flush=True,
        )
        del runner, blob


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    args.out.mkdir(exist_ok=True)
    path = write(args.out, args.nodes, 110, "2m", fmt="json")
    db = args.out / "bench-snapshot.db"
    db.unlink(missing_ok=True)
    asyncio.run(measure(load_scenario(path.read_text(), str(path)), db))


if __name__ == "__main__":
    main()
