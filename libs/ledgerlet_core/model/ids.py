"""Name-based UUIDs (RFC 4122 version 5), fast: every event and every starting object
of a run gets one, a fleet's millions of them."""

from __future__ import annotations

import uuid
from hashlib import sha1


def uuid5_text(namespace: uuid.UUID, name: str) -> str:
    """``str(uuid.uuid5(namespace, name))``, without building a :class:`uuid.UUID`: SHA-1
    of namespace and name, the version and variant bits set, printed 8-4-4-4-12."""
    digest = bytearray(sha1(namespace.bytes + name.encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # the RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
