"""Typed conversion of plain data (YAML/JSON) into models, with located errors.

msgspec does the structural work; this module teaches it ``Quantity`` and turns its
``$.spec.containers[0]`` error paths into the dotted field names users write.
"""

from __future__ import annotations

import re
from typing import Any, Final, TypeVar

import msgspec

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.quantity import MAX_INT64, NANO, Quantity, QuantityError, parse_quantity

T = TypeVar("T")

_PATH_RE = re.compile(r"^(?P<msg>.*?)(?: - at `(?P<path>[^`]*)`)?$", re.S)


#: quantities parsed so far, by their text (Quantity is immutable, so one object serves
#: every pod that asks for "64Mi": a fleet writes the same few quantities a million times)
_PARSED: dict[str, Quantity] = {}
_PARSED_KEPT: Final = 16_384


def quantity_from(obj: object) -> Quantity:
    """A quantity as Kubernetes accepts it in JSON/YAML: a string, or a bare number."""
    if isinstance(obj, str):
        found = _PARSED.get(obj)
        if found is not None:
            return found
    elif isinstance(obj, Quantity):
        return obj
    if isinstance(obj, bool) or not isinstance(obj, (str, int, float)):
        raise TypeError(f'expected a quantity such as "100Mi", got {type(obj).__name__}')
    text = obj.strip() if isinstance(obj, str) else _number_text(obj)
    q = within_int64(parse_quantity(text))
    if isinstance(obj, str):
        if len(_PARSED) >= _PARSED_KEPT:
            _PARSED.clear()
        _PARSED[obj] = q
    return q


def within_int64(q: Quantity) -> Quantity:
    """``q`` if an int64 holds it; else :class:`QuantityError`. Upstream parses such a
    value (an inf.Dec) but its Value() cannot hold it, and nothing a run does with it
    could be right (1e9999 ended runs mid-way): refused where it enters."""
    if abs(q.nanos) > MAX_INT64 * NANO:
        raise QuantityError(f"quantity is larger than {MAX_INT64:,}, the most an int64 holds")
    return q


def _number_text(value: int | float) -> str:
    if isinstance(value, int):
        return str(value)
    text = repr(value)
    return text[:-2] if text.endswith(".0") else text


def dec_hook(tp: type, obj: Any) -> Any:
    if tp is Quantity:
        try:
            return quantity_from(obj)
        except QuantityError as exc:
            raise ValueError(f"invalid quantity {obj!r}: {exc}") from None
    raise NotImplementedError(f"no decoder for {tp!r}")


def enc_hook(obj: Any) -> Any:
    if isinstance(obj, Quantity):
        return str(obj)
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def convert(data: Any, tp: type[T], *, obj: str = "", prefix: str = "") -> T:
    """``msgspec.convert`` with Quantity support; errors become :class:`InputError`."""
    try:
        return msgspec.convert(data, tp, dec_hook=dec_hook, strict=False)
    except msgspec.ValidationError as exc:
        raise _located(exc, data, obj=obj, prefix=prefix) from None


def _located(exc: msgspec.ValidationError, data: Any, *, obj: str, prefix: str) -> InputError:
    m = _PATH_RE.match(str(exc))
    message = m.group("msg") if m else str(exc)
    path = (m.group("path") if m else None) or "$"
    field = _refine_path(path, data)
    missing = re.match(r"Object missing required field `([^`]+)`", message)
    if missing:
        field = f"{field}.{missing.group(1)}" if field else missing.group(1)
        message = "required field is missing"
    message = message.replace(" | null`", "`")  # optional fields: the type users must write
    message = message[0].lower() + message[1:] if message else message
    if prefix:
        field = f"{prefix}.{field}" if field else prefix
    return InputError(message, obj=obj, field=field)


_SEG_RE = re.compile(r"\.([A-Za-z0-9_\-]+)|\[(\d+|\.\.\.)\]")


def _refine_path(path: str, data: Any) -> str:
    """``$.spec.containers[0].resources.limits[...]`` -> ``spec.containers[0].resources.limits.memory``.

    msgspec does not name the dict key whose value failed; find it by trying each value.
    """
    out: list[str] = []
    node: Any = data
    for m in _SEG_RE.finditer(path[1:] if path.startswith("$") else path):
        name, index = m.group(1), m.group(2)
        if name is not None:
            out.append(name)
            node = node.get(name) if isinstance(node, dict) else None
        elif index == "...":
            key = _first_bad_key(node)
            out.append(str(key) if key is not None else "*")
            node = node.get(key) if isinstance(node, dict) and key is not None else None
        else:
            i = int(index)
            if out:
                out[-1] = f"{out[-1]}[{i}]"
            else:
                out.append(f"[{i}]")
            node = node[i] if isinstance(node, list) and i < len(node) else None
    return ".".join(out)


def _first_bad_key(node: Any) -> Any:
    if not isinstance(node, dict):
        return None
    for key, value in node.items():
        try:
            quantity_from(value)
        except (QuantityError, TypeError):
            return key
    return next(iter(node), None)


_ENCODER = msgspec.json.Encoder(enc_hook=enc_hook, order="deterministic")


def to_builtins(value: Any) -> Any:
    """Models to plain JSON-able data (quantities as their canonical strings)."""
    return msgspec.to_builtins(value, enc_hook=enc_hook, order="deterministic")


def object_builtins(obj: Any) -> dict[str, Any]:
    """A Kubernetes object as plain data, always with ``apiVersion`` and ``kind``.

    (``omit_defaults`` would otherwise drop them whenever they equal the model's default.)"""
    out: dict[str, Any] = to_builtins(obj)
    return {"apiVersion": obj.api_version, "kind": obj.kind, **out}


#: plain data encoded in the order it was built in
_AS_BUILT: Final = msgspec.json.Encoder(enc_hook=enc_hook)

#: the kinds whose models encode in the order their plain data does (held so by a test)
_FAST_KINDS: Final = frozenset({"Pod", "Node"})


def object_json(obj: Any) -> bytes:
    """``object_builtins(obj)`` as JSON, encoded straight from the model (no dicts on the
    way: the scenario's objects are a fleet's hundreds of thousands of pods): the same
    bytes, ``apiVersion`` and ``kind`` first."""
    if type(obj).__name__ not in _FAST_KINDS:
        return _AS_BUILT.encode(object_builtins(obj))
    fields = type(obj).__struct_defaults__
    names = type(obj).__struct_fields__
    defaults = dict(zip(names[len(names) - len(fields) :], fields, strict=True))
    if obj.api_version != defaults.get("api_version") or obj.kind != defaults.get("kind"):
        return _AS_BUILT.encode(object_builtins(obj))
    # (the defaults themselves, so that omit_defaults leaves them out of the body)
    body = _ENCODER.encode(msgspec.structs.replace(obj, api_version=defaults["api_version"], kind=defaults["kind"]))
    head = _ENCODER.encode({"apiVersion": obj.api_version, "kind": obj.kind})
    return head if body == b"{}" else head[:-1] + b"," + body[1:]


def json_bytes(value: Any) -> bytes:
    return _ENCODER.encode(value)
