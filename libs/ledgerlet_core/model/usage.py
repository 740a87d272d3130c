"""What workloads consume over time: piecewise-linear series (scenario spec §2).

A series is ``[[seconds, quantity], ...]`` or one constant quantity; values hold before
the first point and after the last. Values are integers (bytes, inodes, processes);
between points they are interpolated with integer arithmetic (rounded down), so every
run computes the same bytes.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from ledgerlet_core.model.codec import quantity_from
from ledgerlet_core.model.duration import DurationError, seconds
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.quantity import QuantityError

LAYOUT_SINGLE: Final = "single"
LAYOUT_DEDICATED_IMAGEFS: Final = "dedicated-imagefs"
LAYOUT_SPLIT_IMAGEFS: Final = "split-imagefs"
LAYOUTS: Final = (LAYOUT_SINGLE, LAYOUT_DEDICATED_IMAGEFS, LAYOUT_SPLIT_IMAGEFS)


@dataclass(frozen=True, slots=True)
class Series:
    """Points ``(t_ns, value)`` sorted by time; evaluated by linear interpolation."""

    times: tuple[int, ...]
    values: tuple[int, ...]
    #: the value when every point has the same one (the hot path skips interpolation)
    fixed: int | None = None
    #: the largest value the series ever takes (linear pieces peak at their points)
    peak: int = 0

    def __post_init__(self) -> None:
        if len(set(self.values)) == 1:
            object.__setattr__(self, "fixed", self.values[0])
        object.__setattr__(self, "peak", max(self.values))

    @staticmethod
    def constant(value: int) -> Series:
        return Series((0,), (value,))

    def at(self, t: int) -> int:
        if self.fixed is not None:
            return self.fixed
        times = self.times
        if t <= times[0]:
            return self.values[0]
        if t >= times[-1]:
            return self.values[-1]
        i = bisect_right(times, t)  # times[i-1] <= t < times[i]
        t0, t1 = times[i - 1], times[i]
        v0, v1 = self.values[i - 1], self.values[i]
        return v0 + ((v1 - v0) * (t - t0)) // (t1 - t0)

    def is_constant(self) -> bool:
        return self.fixed is not None


ZERO: Final = Series.constant(0)


def _value(raw: Any, where: str) -> int:
    try:
        q = quantity_from(raw)
    except (QuantityError, TypeError) as exc:
        raise InputError(f"invalid quantity {raw!r}: {exc}", field=where) from None
    if q.sign() < 0:
        raise InputError(f'invalid quantity "{q}": usage must not be negative', field=where)
    return q.value()


def _time(raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        raise InputError(f"expected seconds as a number, got {raw!r}", field=where)
    if raw < 0:
        raise InputError(f"time {raw} must not be negative", field=where)
    try:
        return seconds(raw)
    except DurationError as exc:
        raise InputError(str(exc), field=where) from None


def parse_series(raw: Any, where: str) -> Series:
    """A constant quantity or ``[[seconds, quantity], ...]`` in non-decreasing time."""
    if not isinstance(raw, list):
        return Series.constant(_value(raw, where))
    if not raw:
        raise InputError("a series needs at least one [seconds, quantity] point", field=where)
    times: list[int] = []
    values: list[int] = []
    for i, point in enumerate(raw):
        if not isinstance(point, list) or len(point) != 2:
            raise InputError(f"expected a [seconds, quantity] pair, got {point!r}", field=f"{where}[{i}]")
        t = _time(point[0], f"{where}[{i}][0]")
        if times and t < times[-1]:
            raise InputError("points must be in time order", field=f"{where}[{i}][0]")
        v = _value(point[1], f"{where}[{i}][1]")
        if times and t == times[-1]:
            # A step: the later point at the same instant wins from that instant on.
            times.append(t)
            values.append(v)
            continue
        times.append(t)
        values.append(v)
    return Series(tuple(times), tuple(values))


@dataclass(frozen=True, slots=True)
class ImageSpec:
    name: str
    size: int
    in_use: bool = False
    pinned: bool = False


@dataclass(frozen=True, slots=True)
class NodeUsage:
    """``usage.node/NAME``: capacity, what the system uses, images and dead containers."""

    capacity: Mapping[str, int] = field(default_factory=dict)  # memory, nodefs, nodefsInodes, pids
    image_fs: Mapping[str, int] | None = None  # capacity, inodes
    system: Mapping[str, Series] = field(default_factory=dict)  # memory, nodefs, nodefsInodes, pids
    inactive_file: Series = ZERO
    images: tuple[ImageSpec, ...] = ()
    dead_containers_count: int = 0
    dead_containers_bytes: int = 0


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    memory: Series | None = None
    rootfs: Series | None = None
    logs: Series | None = None


@dataclass(frozen=True, slots=True)
class PodUsage:
    """``usage.NAMESPACE/POD`` (or ``NAMESPACE/KIND/NAME`` for a workload's pods)."""

    memory: Series = ZERO
    rootfs: Series = ZERO
    logs: Series = ZERO
    volumes: Series = ZERO
    volumes_by_name: Mapping[str, Series] = field(default_factory=dict)
    inodes: Series = ZERO
    pids: Series = ZERO
    containers: Mapping[str, ContainerUsage] = field(default_factory=dict)


_NODE_FIELDS: Final = frozenset({"capacity", "imageFs", "system", "inactiveFile", "images", "deadContainers"})
_NODE_CAPACITY: Final = frozenset({"memory", "nodefs", "nodefsInodes", "pids"})
_NODE_SYSTEM: Final = frozenset({"memory", "nodefs", "nodefsInodes", "pids"})
_POD_FIELDS: Final = frozenset({"memory", "rootfs", "logs", "volumes", "inodes", "pids", "containers"})


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputError(f"expected a mapping, got {type(raw).__name__}", field=where)
    return raw


def _check_keys(raw: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    for key in raw:
        if key not in allowed:
            raise InputError(
                f"unknown field {key!r}; expected one of: {', '.join(sorted(allowed))}", field=f"{where}.{key}"
            )


def parse_node_usage(raw: Any, where: str) -> NodeUsage:
    data = _mapping(raw, where)
    _check_keys(data, _NODE_FIELDS, where)
    capacity_raw = _mapping(data.get("capacity", {}), f"{where}.capacity")
    _check_keys(capacity_raw, _NODE_CAPACITY, f"{where}.capacity")
    capacity = {k: _value(v, f"{where}.capacity.{k}") for k, v in capacity_raw.items()}
    image_fs = None
    if "imageFs" in data:
        fs = _mapping(data["imageFs"], f"{where}.imageFs")
        _check_keys(fs, frozenset({"capacity", "inodes"}), f"{where}.imageFs")
        if "capacity" not in fs:
            raise InputError("required field is missing", field=f"{where}.imageFs.capacity")
        image_fs = {k: _value(v, f"{where}.imageFs.{k}") for k, v in fs.items()}
    system_raw = _mapping(data.get("system", {}), f"{where}.system")
    _check_keys(system_raw, _NODE_SYSTEM, f"{where}.system")
    system = {k: parse_series(v, f"{where}.system.{k}") for k, v in system_raw.items()}
    inactive = parse_series(data["inactiveFile"], f"{where}.inactiveFile") if "inactiveFile" in data else ZERO
    images: list[ImageSpec] = []
    for i, img in enumerate(data.get("images", []) or []):
        iw = f"{where}.images[{i}]"
        img = _mapping(img, iw)
        _check_keys(img, frozenset({"name", "size", "inUse", "pinned"}), iw)
        name = img.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("required field is missing", field=f"{iw}.name")
        if "size" not in img:
            raise InputError("required field is missing", field=f"{iw}.size")
        images.append(
            ImageSpec(
                name=name,
                size=_value(img["size"], f"{iw}.size"),
                in_use=bool(img.get("inUse", False)),
                pinned=bool(img.get("pinned", False)),
            )
        )
    dead = _mapping(data.get("deadContainers", {}), f"{where}.deadContainers")
    _check_keys(dead, frozenset({"count", "bytes"}), f"{where}.deadContainers")
    return NodeUsage(
        capacity=capacity,
        image_fs=image_fs,
        system=system,
        inactive_file=inactive,
        images=tuple(images),
        dead_containers_count=_value(dead.get("count", 0), f"{where}.deadContainers.count"),
        dead_containers_bytes=_value(dead.get("bytes", 0), f"{where}.deadContainers.bytes"),
    )


#: pod usage entries parsed so far, by their JSON: a fleet's pods mostly repeat a few
#: (PodUsage and its series are immutable, so one object serves them all)
_POD_USAGE: dict[bytes, PodUsage] = {}
_POD_USAGE_KEPT: Final = 4096
_KEY: Final = msgspec.json.Encoder()


def parse_pod_usage(raw: Any, where: str) -> PodUsage:
    """A pod's usage entry, as plain data or as JSON (``where`` names it in errors)."""
    try:
        key = _KEY.encode(raw)
    except (TypeError, msgspec.EncodeError):  # not plain data: _parse_pod_usage says why
        return _parse_pod_usage(raw, where)
    found = _POD_USAGE.get(key)
    if found is None:
        found = _parse_pod_usage(raw, where)
        if len(_POD_USAGE) >= _POD_USAGE_KEPT:
            _POD_USAGE.clear()
        _POD_USAGE[key] = found
    return found


def _parse_pod_usage(raw: Any, where: str) -> PodUsage:
    if isinstance(raw, msgspec.Raw):  # (an entry as its input's JSON)
        try:
            raw = msgspec.json.decode(raw)
        except RecursionError:
            raise InputError("nested too deeply", field=where) from None
        except msgspec.DecodeError:  # (read whole before: only an integer too long to convert)
            raise InputError("an integer too long to read", field=where) from None
    data = _mapping(raw, where)
    _check_keys(data, _POD_FIELDS, where)

    def series(name: str) -> Series:
        return parse_series(data[name], f"{where}.{name}") if name in data else ZERO

    by_name: dict[str, Series] = {}
    volumes = ZERO
    if isinstance(data.get("volumes"), dict):
        by_name = {k: parse_series(v, f"{where}.volumes.{k}") for k, v in data["volumes"].items()}
    else:
        volumes = series("volumes")
    containers: dict[str, ContainerUsage] = {}
    for cname, craw in _mapping(data.get("containers", {}), f"{where}.containers").items():
        cw = f"{where}.containers.{cname}"
        c = _mapping(craw, cw)
        _check_keys(c, frozenset({"memory", "rootfs", "logs"}), cw)
        containers[cname] = ContainerUsage(
            memory=parse_series(c["memory"], f"{cw}.memory") if "memory" in c else None,
            rootfs=parse_series(c["rootfs"], f"{cw}.rootfs") if "rootfs" in c else None,
            logs=parse_series(c["logs"], f"{cw}.logs") if "logs" in c else None,
        )
    return PodUsage(
        memory=series("memory"),
        rootfs=series("rootfs"),
        logs=series("logs"),
        volumes=volumes,
        volumes_by_name=by_name,
        inodes=series("inodes"),
        pids=series("pids"),
        containers=containers,
    )


def effective_layout(annotation: str | None, has_image_fs: bool) -> str:
    """Annotation ``ledgerlet/filesystems``; an ``imageFs`` in usage implies a dedicated one."""
    if annotation:
        return annotation
    return LAYOUT_DEDICATED_IMAGEFS if has_image_fs else LAYOUT_SINGLE
