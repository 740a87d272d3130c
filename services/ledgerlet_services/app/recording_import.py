"""``ledgerlet import``: reads the recorded files, builds the scenario, checks that
ledgerlet accepts it, and only then writes it.

Files are YAML or JSON, as operators have them: ``kubectl get ... -o yaml|json``, the
kubelet's ``/pods``, ``/stats/summary`` and ``/configz``. Files given without saying
what they hold are sorted by their content; ``-`` is standard input.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.scenario.bounds import decode_text
from ledgerlet_core.scenario.documents import KubernetesLoader, read_documents
from ledgerlet_core.scenario.load import load_scenario
from ledgerlet_core.scenario.recording import build_scenario, offset_text
from ledgerlet_services.app.inputs import read_bounded, read_stream_bounded
from ledgerlet_services.app.outputs import check_output, write_output

STDIN = "-"
#: what is read of a directory (dot-files, such as a half-written ``.x.json.tmp``, are not)
RECORDING_SUFFIXES = (".json", ".yaml", ".yml")


@dataclass
class Recording:
    """The documents to import, by what they hold, each with the file it came from."""

    objects: list[tuple[str, Any]] = field(default_factory=list)
    summaries: list[tuple[str, Any]] = field(default_factory=list)
    configs: list[tuple[str, Any]] = field(default_factory=list)


class _Reader:
    """Reads each named file (standard input at most once) into its documents."""

    def __init__(self, stdin: BinaryIO | None) -> None:
        self._stdin = stdin
        self._stdin_read = False

    def documents(self, name: str | Path) -> list[tuple[str, Any]]:
        """The documents of a file, or of every YAML and JSON file under a directory (what
        ``ledgerlet collect`` writes), in name order."""
        if str(name) != STDIN and Path(name).is_dir():
            files = sorted(p for p in Path(name).rglob("*") if _recording(p))
            if not files:
                raise InputError("no .json, .yaml or .yml file in the directory", file=str(name))
            return [doc for f in files for doc in self._file(f)]
        return self._file(name)

    def _file(self, name: str | Path) -> list[tuple[str, Any]]:
        source = "<stdin>" if str(name) == STDIN else str(name)
        if str(name) == STDIN:
            if self._stdin_read:
                raise InputError("standard input (-) can be given once", file=source)
            self._stdin_read = True
            data = read_stream_bounded(self._stdin or sys.stdin.buffer, source)
        else:
            try:
                data = read_bounded(Path(name), source)  # (a device or a FIFO too: up to the limit)
            except OSError as exc:
                raise InputError(exc.strerror or str(exc), file=source) from None
        docs = read_documents(decode_text(data, source), source, KubernetesLoader)
        if not docs:
            raise InputError("no document in the file", file=source)
        return [(source if len(docs) == 1 else f"{source} (document {i + 1})", d) for i, d in enumerate(docs)]


def _recording(path: Path) -> bool:
    return path.suffix in RECORDING_SUFFIXES and not path.name.startswith(".") and path.is_file()


def kind_of(doc: Any) -> str:
    """What a recorded document holds: "summary" (``/stats/summary``), "config"
    (``/configz`` or a KubeletConfiguration) or "objects" (anything else)."""
    if isinstance(doc, dict):
        node = doc.get("node")
        if "kind" not in doc and isinstance(node, dict) and "nodeName" in node:
            return "summary"
        if "kubeletconfig" in doc or doc.get("kind") == "KubeletConfiguration":
            return "config"
    return "objects"


def read_recording(
    *,
    inputs: Sequence[str | Path] = (),
    objects: Sequence[str | Path] = (),
    stats: Sequence[str | Path] = (),
    kubelet_config: str | Path | None = None,
    stdin: BinaryIO | None = None,
) -> Recording:
    reader = _Reader(stdin)
    rec = Recording()
    for name in objects:
        rec.objects += reader.documents(name)
    for name in stats:
        rec.summaries += reader.documents(name)
    if kubelet_config is not None:
        rec.configs += reader.documents(kubelet_config)
    for name in inputs:
        for source, doc in reader.documents(name):
            {"summary": rec.summaries, "config": rec.configs, "objects": rec.objects}[kind_of(doc)].append(
                (source, doc)
            )
    return rec


def import_files(
    *,
    inputs: Sequence[str | Path] = (),
    objects: Sequence[str | Path] = (),
    stats: Sequence[str | Path] = (),
    kubelet_config: str | Path | None = None,
    name: str,
    out: Path,
    stdin: BinaryIO | None = None,
    write: Callable[[bytes], None] | None = None,
) -> str:
    """Read the recordings, build the scenario, check that it loads, and write it to
    ``out`` (with ``write``: the command line's safe writer, checked beforehand)."""
    rec = read_recording(inputs=inputs, objects=objects, stats=stats, kubelet_config=kubelet_config, stdin=stdin)
    if not rec.objects:
        raise InputError(
            "no cluster objects among the files: give kubectl get nodes,pods,... -o yaml (or the kubelet's /pods)"
        )
    if len(rec.configs) > 1:
        raise InputError(
            "one kubelet configuration per import, found " + ", ".join(s for s, _ in rec.configs),
            file=rec.configs[1][0],
        )
    doc, notes = build_scenario(
        name=name,
        objects=rec.objects,
        summaries=rec.summaries,
        kubelet_config=rec.configs[0][1] if rec.configs else None,
    )
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=120)
    # refuse to write what `ledgerlet run` would refuse; the error names the file to be
    scenario = load_scenario(text, f"{out} (built from the recordings, not written)")
    (write or (lambda data: write_output(check_output(out, "--out"), data)))(text.encode())
    lines = [
        f"{out}: {len(scenario.objects)} objects, {len(scenario.events)} stats events over "
        f"{offset_text(timedelta(microseconds=scenario.duration // 1000))} from {doc['spec'].get('start', '-')}",
        *(f"note: {n}" for n in notes),
        f"run it: ledgerlet run {out} --decisions decisions.jsonl",
    ]
    return "\n".join(lines)
