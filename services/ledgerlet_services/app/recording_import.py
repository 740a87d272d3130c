"""``ledgerlet import``: reads the recorded files, builds the scenario, checks that
ledgerlet accepts it, and only then writes it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.recording import build_scenario


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=str(path)) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc}", file=str(path)) from None


def import_files(*, objects: list[Path], stats: list[Path], kubelet_config: Path | None, name: str, out: Path) -> str:
    if not objects:
        raise InputError("give the cluster's objects with --objects (kubectl get nodes,pods,... -o json)")
    config = _read_json(kubelet_config) if kubelet_config is not None else None
    doc, notes = build_scenario(
        name=name,
        objects=[(str(p), _read_json(p)) for p in objects],
        summaries=[(str(p), _read_json(p)) for p in stats],
        kubelet_config=config,
    )
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=120)
    scenario = load_scenario(text, str(out))  # refuse to write what `ledgerlet run` would refuse
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out)
    lines = [
        f"{out}: {len(scenario.objects)} objects, {len(scenario.events)} stats events over "
        f"{scenario.duration / 1e9:g}s from {doc['spec'].get('start', '-')}",
        *(f"note: {n}" for n in notes),
        f"run it: ledgerlet run {out} --decisions decisions.jsonl",
    ]
    return "\n".join(lines)
