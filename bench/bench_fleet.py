"""The README's fleet on the embedded default (``bench/fleet.py``).

N nodes x 110 bound pods with per-pod usage, housekeeping every 10 s, 10 minutes, one
node in five crossing a hard threshold once. Reported:

* reading and checking the scenario (JSON, flow-style YAML and block-style YAML as
  kubectl writes it), each in a process of its own; YAML is read by rapidyaml where that provably
  gives PyYAML's documents (``scenario/fast_yaml.py``), so the figures say which read it;
* ``ledgerlet run`` of the fleet for 0 s (the load-only baseline: read, start the
  services, fold and store the cluster) and for 10 minutes, each ``--runs`` times in a
  process of its own; the closed loop's wall time is the median run minus the median
  baseline; virtual seconds per wall second, evictions, peak RSS of each.

The default is the README's fleet, 5,000 nodes (550,000 pods); ``--nodes 500`` is a tenth
of it, for a quick look. Every figure comes from a process of its own, with its peak RSS.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from measure import fleet_file, run_ledgerlet

ROOT = Path(__file__).resolve().parents[1]


_READ = """
import json, resource, sys, time
from pathlib import Path
from typing import Any
from ledgerlet_core.scenario import fast_yaml
from ledgerlet_core.scenario.load import load_scenario
answers = []
read_fast = fast_yaml.read_fast
def watched(text: str, loader: Any) -> Any:
    docs = read_fast(text, loader)
    answers.append(docs is not None)
    return docs
fast_yaml.read_fast = watched
path = Path(sys.argv[1])
began = time.perf_counter()
load_scenario(path.read_text(), str(path))
took = time.perf_counter() - began
print(json.dumps({"s": took, "fast": any(answers), "kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def _read(path: Path) -> tuple[float, str, float]:
    """Seconds to read and check the scenario in a process of its own, which parser read
    it, and the process's peak RSS (MiB)."""
    done = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, check=True)
    got = json.loads(done.stdout.strip().splitlines()[-1])
    reader = "msgspec" if path.suffix == ".json" else "rapidyaml" if got["fast"] else "PyYAML"
    return got["s"], reader, got["kib"] / 1024


def _run(scenario: Path, out: Path, name: str) -> tuple[float, float, dict[str, int]]:
    """``ledgerlet run``: wall seconds, peak RSS (MiB), decisions by type."""
    wall, peak_kib, counts = run_ledgerlet(scenario, out, name)
    return wall, peak_kib / 1024, counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("out"))
    args = ap.parse_args()
    out: Path = args.out / "bench-fleet"
    n = args.nodes
    full = fleet_file(out, n, 110, "10m", "json")
    base = fleet_file(out, n, 110, "0s", "json")
    flow = fleet_file(out, n, 110, "10m", "yaml")
    block = fleet_file(out, n, 110, "10m", "block.yaml")
    print(
        f"fleet: {n:,} nodes x 110 pods = {n * 110:,} bound pods; JSON {full.stat().st_size / 1e6:.0f} MB, "
        f"flow-style YAML {flow.stat().st_size / 1e6:.0f} MB",
        flush=True,
    )
    reads = {"json": _read(full), "yaml_flow": _read(flow), "yaml_block": _read(block)}
    print(
        "reading and checking: "
        + ", ".join(f"{k} {s:.1f}s ({by}, peak {rss:,.0f} MiB)" for k, (s, by, rss) in reads.items())
        + " (targets at 5,000 nodes: JSON < 10 s, YAML < 60 s)",
        flush=True,
    )
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
        f"load-only run (read, start, fold and store {n * 110:,} pods): {b:.1f}s, peak RSS {rss_base:,.0f} MiB "
        f"(target at 5,000 nodes: < 10 s, < 2 GiB)\n"
        f"10-minute closed loop: {f:.1f}s in all (target < 60 s), {loop:.1f}s over the baseline = {600 / loop:.1f} "
        f"virtual s per wall s; {counts.get('PodEvicted', 0)} evictions; peak RSS {rss_full:,.0f} MiB (target < 4 GiB)",
        flush=True,
    )
    (out / "results.json").write_text(
        json.dumps(
            {
                "nodes": n,
                "pods": n * 110,
                "read_s": {k: r[0] for k, r in reads.items()},
                "read_rss_mib": {k: r[2] for k, r in reads.items()},
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
