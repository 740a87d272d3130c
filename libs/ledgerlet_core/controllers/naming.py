"""Pod names as Kubernetes makes them, made deterministic.

Upstream draws a random 5-character suffix (``utilrand.String(5)``) from the alphabet
below, and names a Deployment's ReplicaSet by a hash of its pod template
(``controller.ComputeHash`` -> ``rand.SafeEncodeString``). ledgerlet derives both from a
hash of what they name, so every run names the same pods the same way.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import msgspec

from ledgerlet_core.model.codec import enc_hook

#: ``k8s.io/apimachinery/pkg/util/rand``: no vowels, no 0/1/3 (no words, no confusion)
ALPHANUMS: Final = "bcdfghjklmnpqrstvwxz2456789"


def suffix(seed: str, length: int = 5) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in digest[:length])


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h ^= b
        h = (h * 0x01000193) & 0xFFFFFFFF
    return h


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each byte to a character of the alphabet."""
    return "".join(ALPHANUMS[b % len(ALPHANUMS)] for b in text.encode())


def template_hash(template: Any) -> str:
    """The pod-template-hash label of a Deployment's ReplicaSet."""
    # quantities as their canonical strings (a template with resources holds Quantity values)
    data = msgspec.json.encode(msgspec.to_builtins(template, order="sorted", enc_hook=enc_hook))
    return safe_encode(str(fnv32a(data)))
