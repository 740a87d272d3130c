"""The fleet of the fleet-scale issue on the embedded default (``bench/fleet.py``).

N nodes x 110 bound pods with per-pod usage, housekeeping every 10 s, 10 minutes, one
node in five crossing a hard threshold once. Reported:

* reading and checking the scenario (JSON, flow-style YAML and block-style YAML as
  kubectl writes it), in this process; YAML is read by rapidyaml where that provably
  gives PyYAML's documents (``scenario/fast_yaml.py``), so the figures say which read it;
* ``ledgerlet run`` of the fleet for 0 s (the load-only baseline: read, start the
  services, fold and store the cluster) and for 10 minutes, each ``--runs`` times in a
  process of its own; the closed loop's wall time is the median run minus the median
  baseline; virtual seconds per wall second, evictions, peak RSS of each.

The issue's fleet is 5,000 nodes (``--nodes 5000``); the default is a tenth of it, which
fits this machine's memory with room to spare (see the README for both).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from fleet import write
from ledgerlet_core.scenario import fast_yaml
from ledgerlet_core.scenario.load import load_scenario
from measure import run_ledgerlet

ROOT = Path(__file__).resolve().parents[1]


def _read(path: Path) -> tuple[float, str]:
    """Seconds to read and check the scenario, and which parser read it."""
    answers: list[bool] = []
    read_fast = fast_yaml.read_fast

    def watched(text: str, loader: type[Any]) -> list[Any] | None:
        docs = read_fast(text, loader)
        answers.append(docs is not None)
        return docs

    fast_yaml.read_fast = watched
    try:
        began = time.perf_counter()
        load_scenario(path.read_text(), str(path))
        took = time.perf_counter() - began
    finally:
        fast_yaml.read_fast = read_fast
    reader = "msgspec" if path.suffix == ".json" else "rapidyaml" if any(answers) else "PyYAML"
    return took, reader


def _run(scenario: Path, out: Path, name: str) -> tuple[float, float, dict[str, int]]:
    """``ledgerlet run``: wall seconds, peak RSS (MiB), decisions by type."""
    wall, peak_kib, counts = run_ledgerlet(scenario, out, name)
    return wall, peak_kib / 1024, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=500)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    out: Path = args.out / "bench-fleet"
    n = args.nodes
    full = write(out, n, 110, "10m", fmt="json")
    base = write(out, n, 110, "0s", fmt="json")
    flow = write(out, n, 110, "10m", fmt="yaml")
    block = write(out, n, 110, "10m", fmt="block.yaml")
    gc.set_threshold(50_000, 20, 100)  # as `ledgerlet run` does
    print(
        f"fleet: {n:,} nodes x 110 pods = {n * 110:,} bound pods; JSON {full.stat().st_size / 1e6:.0f} MB, "
        f"flow-style YAML {flow.stat().st_size / 1e6:.0f} MB",
        flush=True,
    )
    reads = {"json": _read(full), "yaml_flow": _read(flow), "yaml_block": _read(block)}
    print("reading and checking: " + ", ".join(f"{k} {s:.2f}s ({by})" for k, (s, by) in reads.items()), flush=True)
    bases, fulls = [], []
    rss_base = rss_full = 0.0
    counts: dict[str, int] = {}
    for i in range(args.runs):
        wall, rss, _ = _run(base, out, "fleet-base")
        bases.append(wall)
        rss_base = max(rss_base, rss)
        wall, rss, counts = _run(full, out, "fleet-full")
        fulls.append(wall)
        rss_full = max(rss_full, rss)
        print(f"  run {i + 1}: load-only {bases[-1]:.1f}s, 10 minutes {fulls[-1]:.1f}s", flush=True)
    b, f = statistics.median(bases), statistics.median(fulls)
    loop = f - b
    print(
        f"load-only run (read, start, fold and store {n * 110:,} pods): {b:.1f}s, peak RSS {rss_base:,.0f} MiB\n"
        f"10-minute closed loop: {f:.1f}s in all, {loop:.1f}s over the baseline = {600 / loop:.1f} virtual s per "
        f"wall s; {counts.get('PodEvicted', 0)} evictions; peak RSS {rss_full:,.0f} MiB",
        flush=True,
    )
    (out / "results.json").write_text(
        json.dumps(
            {
                "nodes": n,
                "pods": n * 110,
                "read_s": {k: s for k, (s, _) in reads.items()},
                "load_only_s": b,
                "run_s": f,
                "closed_loop_s": loop,
                "virtual_per_wall": 600 / loop,
                "rss_load_only_mib": rss_base,
                "rss_run_mib": rss_full,
                "decisions": counts,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
