"""The protobuf wire format, both ways, for what kubectl sends or asks in it: the reviews
it creates (``application/vnd.kubernetes.protobuf``: the ``k8s\\x00`` envelope around a
``runtime.Unknown``) and the OpenAPI v2 document (``openapi.v2.Document``, gnostic's).

Only what those messages use: varints and length-delimited fields (strings, bytes,
messages, packed nothing); a field number and its wire type per value.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

#: the magic bytes of a Kubernetes protobuf body (``k8s.io/apimachinery/pkg/runtime/serializer/protobuf``)
K8S_MAGIC: Final = b"k8s\x00"
VARINT: Final = 0
FIXED64: Final = 1
BYTES: Final = 2
FIXED32: Final = 5


class WireError(ValueError):
    """Bytes that are not the protobuf they claim to be."""


def _varint(data: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(data) or shift > 63:
            raise WireError("truncated varint")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


def fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` for every field of a message."""
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == VARINT:
            value, i = _varint(data, i)
            yield number, wire, value
        elif wire == BYTES:
            size, i = _varint(data, i)
            if i + size > len(data):
                raise WireError("truncated field")
            yield number, wire, data[i : i + size]
            i += size
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            yield number, wire, data[i : i + width]
            i += width
        else:
            raise WireError(f"wire type {wire} is not read here")


def strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    """The string fields of a message, by the names given to their numbers."""
    out = {}
    for number, wire, value in fields(data):
        if number in names and wire == BYTES and isinstance(value, bytes):
            out[names[number]] = value.decode("utf-8", errors="replace")
    return out


def message(data: bytes, number: int) -> bytes | None:
    """The (last) embedded message in field ``number``."""
    found = None
    for n, wire, value in fields(data):
        if n == number and wire == BYTES and isinstance(value, bytes):
            found = value
    return found


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """``(apiVersion, kind, raw)`` of a Kubernetes protobuf body."""
    if not body.startswith(K8S_MAGIC):
        raise WireError("no k8s protobuf magic")
    unknown = body[len(K8S_MAGIC) :]
    type_meta = strings(message(unknown, 1) or b"", {1: "apiVersion", 2: "kind"})
    return type_meta.get("apiVersion", ""), type_meta.get("kind", ""), message(unknown, 2) or b""


# -- writing ---------------------------------------------------------------------------------
def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def field_bytes(number: int, value: bytes) -> bytes:
    return _encode_varint(number << 3 | BYTES) + _encode_varint(len(value)) + value


def field_string(number: int, value: str) -> bytes:
    return field_bytes(number, value.encode())


def field_bool(number: int, value: bool) -> bytes:
    return _encode_varint(number << 3 | VARINT) + _encode_varint(int(value))


def join(parts: Iterable[bytes]) -> bytes:
    return b"".join(parts)
