"""Name-based UUIDs (RFC 4122 version 5), fast: every event and every starting object
of a run gets one, a fleet's millions of them."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from hashlib import sha1
from typing import Final


def uuid5_text(namespace: uuid.UUID, name: str) -> str:
    """``str(uuid.uuid5(namespace, name))``, without building a :class:`uuid.UUID`: SHA-1
    of namespace and name, printed 8-4-4-4-12 with the version nibble 5 and the RFC 4122
    variant bits (``10``) set in the 17th hex digit."""
    h = sha1(namespace.bytes + name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}"


def uuid5_texts(namespace: uuid.UUID, head: str, tails: Iterable[str]) -> list[str]:
    """``uuid5_text(namespace, head + tail)`` for each tail, hashing the shared ``head``
    once (a tick's observations' ids differ in their last place alone)."""
    shared = sha1(namespace.bytes + head.encode())
    out = []
    for tail in tails:
        hashed = shared.copy()
        hashed.update(tail.encode())
        h = hashed.hexdigest()
        out.append(f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:32]}")
    return out


#: a hex digit with its top two bits made ``10`` (the RFC 4122 variant)
_VARIANT: Final = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}
