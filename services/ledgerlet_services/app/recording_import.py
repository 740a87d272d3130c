"""``ledgerlet import``: reads the recorded files, builds the scenario, checks that
ledgerlet accepts it, and only then writes it.

Files are YAML or JSON, as operators have them: ``kubectl get ... -o yaml|json``, the
kubelet's ``/pods``, ``/stats/summary`` and ``/configz``. Files given without saying
what they hold are sorted by their content; ``-`` is standard input. A directory is read
file by file by content, whatever the names (``kubelet_stats_summary`` has no
extension); what is not a recording (a README, an archive, a half-written dot-file) is
skipped and said, with why.
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
from ledgerlet_core.scenario.recording_gaps import MAX_GAP
from ledgerlet_services.app.collector import collector_paused
from ledgerlet_services.app.inputs import read_bounded, read_stream_bounded
from ledgerlet_services.app.outputs import check_output, write_output

STDIN = "-"


@dataclass
class Recording:
    """The documents to import, by what they hold, each with the file it came from."""

    objects: list[tuple[str, Any]] = field(default_factory=list)
    summaries: list[tuple[str, Any]] = field(default_factory=list)
    configs: list[tuple[str, Any]] = field(default_factory=list)
    #: files of a directory that were not read, and why
    skipped: list[tuple[str, str]] = field(default_factory=list)


class _Reader:
    """Reads each named file (standard input at most once) into its documents."""

    def __init__(self, stdin: BinaryIO | None) -> None:
        self._stdin = stdin
        self._stdin_read = False
        self.skipped: list[tuple[str, str]] = []

    def documents(self, name: str | Path) -> list[tuple[str, Any]]:
        """The documents of a file, or of every file under a directory that holds
        recordings (what ``ledgerlet collect`` writes, or a folder of files by hand), in
        name order; the others are skipped with the reason."""
        if str(name) != STDIN and Path(name).is_dir():
            out: list[tuple[str, Any]] = []
            files = sorted(p for p in Path(name).rglob("*") if p.is_file())
            for f in files:
                why = _not_a_recording(f, Path(name))
                if why is None:
                    try:
                        docs = self._file(f)
                    except InputError as exc:
                        why = exc.message
                    else:
                        why = next((_unknown(d) for _, d in docs if _unknown(d)), None)
                        if why is None:
                            out += docs
                            continue
                self.skipped.append((str(f), why))
            if not out:
                reasons = "; ".join(f"{f}: {why}" for f, why in self.skipped[:3])
                raise InputError(
                    f"no recording in the directory ({len(files)} files"
                    + (f"; {reasons}{' ...' if len(self.skipped) > 3 else ''})" if reasons else ")"),
                    file=str(name),
                )
            return out
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


def _not_a_recording(path: Path, root: Path) -> str | None:
    """Why a file under a directory is not read at all (None: it is)."""
    if any(part.startswith(".") for part in path.relative_to(root).parts):
        return "a dot-file or in a dot-directory (such as a half-written .x.json.tmp)"
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError as exc:
        return exc.strerror or str(exc)
    if b"\0" in head:
        return "binary, not YAML or JSON"
    return None


def _unknown(doc: Any) -> str | None:
    """Why a document read from a directory is none of what import takes (None: it is)."""
    if not isinstance(doc, dict):
        return f"a YAML {type(doc).__name__}, not a Kubernetes object, /stats/summary or configz"
    if kind_of(doc) != "objects" or isinstance(doc.get("kind"), str):
        return None
    return "a mapping with no kind: not a Kubernetes object, /stats/summary or configz"


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
    rec.skipped = reader.skipped
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
    allow_gaps: bool = False,
    write: Callable[[bytes], None] | None = None,
) -> str:
    """Read the recordings, build the scenario, check that it loads, and write it to
    ``out`` (with ``write``: the command line's safe writer, checked beforehand; ``-``:
    standard output); the summary for the user. ``allow_gaps`` takes recordings however
    far apart (scenario/recording_gaps.py)."""
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
        max_gap=None if allow_gaps else MAX_GAP,
    )
    text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, width=120)
    # refuse to write what `ledgerlet run` would refuse; the error names the file to be
    with collector_paused():  # (a fleet's millions of objects, none garbage)
        scenario = load_scenario(text, f"{out} (built from the recordings, not written)")
    (write or (lambda data: write_output(check_output(out, "--out"), data)))(text.encode())
    lines = [
        f"{out}: {len(scenario.objects)} objects, {len(scenario.events)} stats events over "
        f"{offset_text(timedelta(microseconds=scenario.duration // 1000))} from {doc['spec'].get('start', '-')}",
        *(f"note: {n}" for n in notes),
        *(f"skipped {f}: {why}" for f, why in rec.skipped),
        *([f"run it: ledgerlet run {out} --decisions decisions.jsonl"] if str(out) != "-" else []),
    ]
    return "\n".join(lines)
