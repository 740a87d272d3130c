"""Writes (or checks) the JSON Schemas in ``contracts/`` from the event models.

``contracts/events/<kind>/<Type>.v<N>.schema.json`` is each event's ``data``;
``envelope.v1.schema.json`` the envelope every event travels in;
``decision-log.v1.schema.json`` one line of the decision log (scenario spec §5), with
each decision type's ``data`` bound to its schema; ``scenario.v1.schema.json`` a
scenario file (docs/scenario-format.md).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec

from ledgerlet_core.contracts.decision_log import DecisionRecord
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import DECISION, EVENT_TYPES
from ledgerlet_core.model.quantity import Quantity
from ledgerlet_core.scenario.schema import scenario_schema

BASE_ID = "https://ledgerlet.dev/contracts"


def _hook(tp: type) -> dict[str, Any]:
    if tp is Quantity:
        return {"type": "string", "description": "a Kubernetes quantity, e.g. 100Mi"}
    raise NotImplementedError


def _schema(model: type, *, title: str, schema_id: str, description: str = "") -> dict[str, Any]:
    (root,), defs = msgspec.json.schema_components([model], schema_hook=_hook, ref_template="#/$defs/{name}")
    out: dict[str, Any] = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": schema_id}
    if "$ref" in root:
        name = root["$ref"].split("/")[-1]
        out.update(defs.pop(name))
    else:
        out.update(root)
    out["title"] = title
    if description:
        out["description"] = description
    if defs:
        out["$defs"] = defs
    return out


def generate() -> dict[str, dict[str, Any]]:
    """Relative path -> schema document."""
    files: dict[str, dict[str, Any]] = {}
    for name, et in sorted(EVENT_TYPES.items()):
        path = f"events/{et.kind}/{name}.v{et.version}.schema.json"
        doc = (et.model.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        schema = _schema(
            et.model, title=f"{name} (v{et.version}, {et.kind})", schema_id=f"{BASE_ID}/{path}", description=doc
        )
        schema["x-ledgerlet"] = {"type": name, "kind": et.kind, "version": et.version}
        files[path] = schema
    env = _schema(
        Envelope,
        title="Event envelope (v1)",
        schema_id=f"{BASE_ID}/envelope.v1.schema.json",
        description="Every event, on the bus and in the store; `data` is the type's schema.",
    )
    env["properties"]["data"] = {"type": "object"}
    files["envelope.v1.schema.json"] = env
    record = _schema(
        DecisionRecord,
        title="Decision log record (v1)",
        schema_id=f"{BASE_ID}/decision-log.v1.schema.json",
        description="One line of the decision log (scenario spec section 5).",
    )
    record["properties"]["data"] = {"type": "object"}
    record["properties"]["type"] = {"enum": sorted(n for n, et in EVENT_TYPES.items() if et.kind == DECISION)}
    record["allOf"] = [
        {
            "if": {"properties": {"type": {"const": name}}},
            "then": {"properties": {"data": {"$ref": f"events/{et.kind}/{name}.v{et.version}.schema.json"}}},
        }
        for name, et in sorted(EVENT_TYPES.items())
        if et.kind == DECISION
    ]
    files["decision-log.v1.schema.json"] = record
    files["scenario.v1.schema.json"] = scenario_schema()
    return files


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def check_or_write(directory: Path, *, write: bool) -> list[str]:
    """Stale or missing files (relative paths); writes them when ``write``."""
    problems: list[str] = []
    wanted = generate()
    for rel, doc in wanted.items():
        path = directory / rel
        text = render(doc)
        if not path.exists() or path.read_text() != text:
            problems.append(rel)
            if write:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for path in sorted((directory / "events").rglob("*.schema.json")) if (directory / "events").exists() else []:
        rel = str(path.relative_to(directory))
        if rel not in wanted:
            problems.append(rel)
            if write:
                path.unlink()
    return problems
