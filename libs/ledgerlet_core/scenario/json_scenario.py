"""A JSON scenario read with its ``objects`` and ``usage`` entries left as JSON.

A fleet's scenario is hundreds of thousands of pods and usage entries. Read as one
document they would all be dicts at once (gigabytes) before a single one is checked;
read here, each object is decoded on its own when the loader comes to it and dropped
once it is a model, and each usage entry stays the few bytes of JSON its input carries.
Everything else of the document reads as :func:`~ledgerlet_core.scenario.documents.read_documents`
gives it, and so do all its errors: whatever this reading does not take (a section of
the wrong type, JSON it cannot read) is left to the document reader.
"""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from ledgerlet_core.model.errors import InputError

#: the sections kept as JSON, an entry at a time
LAZY_SECTIONS: Final = ("objects", "usage")

_DOC: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
_OBJECTS: Final = msgspec.json.Decoder(list[msgspec.Raw])
_USAGE: Final = msgspec.json.Decoder(dict[str, msgspec.Raw])
_PLAIN: Final = msgspec.json.Decoder()


def read_json_scenario(data: bytes) -> dict[str, Any] | None:
    """The scenario document with ``spec.objects`` a list and ``spec.usage`` a mapping of
    :class:`msgspec.Raw` (the rest as plain data), or None when it is not such a JSON
    document (the whole text is then read as any document is)."""
    try:
        doc: dict[str, Any] = dict(_DOC.decode(data))
        spec_raw = doc.get("spec")
        spec = _DOC.decode(spec_raw) if spec_raw is not None else None
    except (msgspec.DecodeError, RecursionError):
        return None
    for key, raw in doc.items():
        if key != "spec":
            doc[key] = _plain(raw)
    if spec is None:
        return doc
    out: dict[str, Any] = {}
    for key, raw in spec.items():
        try:
            if key == "objects":
                out[key] = _OBJECTS.decode(raw)
                continue
            if key == "usage":
                out[key] = _USAGE.decode(raw)
                continue
        except msgspec.DecodeError:  # (not a list, not a mapping: the loader says so)
            pass
        out[key] = _plain(raw)
    doc["spec"] = out
    return doc


def _plain(raw: msgspec.Raw) -> Any:
    try:
        return _PLAIN.decode(raw)
    except RecursionError:
        raise InputError("nested too deeply", obj="JSON") from None
    except msgspec.DecodeError as exc:  # (read whole before: only an integer too long to convert)
        raise InputError(json_value_error(bytes(raw), exc), obj="JSON") from None


_LONG_DIGITS: Final = re.compile(rb"[0-9]{1000,}")


def json_value_error(data: bytes, exc: Exception) -> str:
    """What is wrong with JSON that parsed but would not decode: an integer too long to
    convert (msgspec says only "out of range"), named by its length and a few of its
    first characters."""
    found = _LONG_DIGITS.search(data)
    if found is None:
        return f"not valid JSON: {exc}"
    head = data[max(0, found.start() - 40) : found.start()].decode(errors="replace").split("\n")[-1]
    return f"an integer of {found.end() - found.start():,} digits is too long to read (after {head!r})"


def plain(entry: Any) -> Any:
    """An entry of a lazy section as plain data (already plain data: as it is)."""
    if isinstance(entry, msgspec.Raw):
        return _plain(entry)
    return entry
