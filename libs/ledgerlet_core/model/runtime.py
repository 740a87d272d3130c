"""What the container runtime reports besides stats: its images and dead containers.

The kubelet's image manager and container GC read it; a closed-loop node's observation
carries it (``NodeObserved.runtime``).
"""

from __future__ import annotations

import msgspec


class RuntimeImage(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """An image as the kubelet's image manager tracks it (times in virtual ns)."""

    name: str
    size: int
    in_use: bool = False
    pinned: bool = False
    first_detected: int = 0
    last_used: int | None = None


class RuntimeView(msgspec.Struct, rename="camel", kw_only=True, omit_defaults=True):
    """What the container runtime reports besides stats (closed-loop nodes only)."""

    layout: str
    images: list[RuntimeImage] = []
    dead_containers: int = 0
    #: dead containers' writable layers (where layers live) and logs (always on nodefs)
    dead_container_bytes: int = 0
    dead_container_log_bytes: int = 0
