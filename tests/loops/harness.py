"""Driving one control loop with hand-made events, as the shell would, without a bus."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

from ledgerlet_core.contracts import inputs as inp
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.internal import ClockTick
from ledgerlet_core.contracts.registry import make_envelope
from ledgerlet_core.loop.emitter import Emitter
from ledgerlet_core.model.duration import SECOND
from ledgerlet_services.loops.base import Loop


class Drive:
    """Feeds a loop inputs, clock ticks and other loops' decisions; keeps what it emitted."""

    def __init__(self, loop: Loop, run: str = "test") -> None:
        self.loop = loop
        self.run = run
        self._inputs = 0
        self._rounds: dict[int, int] = {}
        self.emitted: list[Envelope] = []

    def feed(self, env: Envelope) -> list[Envelope]:
        out = Emitter(env, self.loop.rank)
        steps = self.loop.handle(env, out)
        if isinstance(steps, Iterator):
            for _ in steps:
                pass
        got = [e.envelope for e in out.out]
        self.emitted += got
        return got

    def input(
        self, data: msgspec.Struct, at: float = 0, *, node: str | None = None, pod: str | None = None
    ) -> list[Envelope]:
        env = make_envelope(
            data, run=self.run, t=round(at * SECOND), order=[0, self._inputs], stream="test", node=node, pod=pod
        )
        self._inputs += 1
        return self.feed(env)

    def apply(self, obj: dict[str, Any], at: float = 0, *, initial: bool = True) -> list[Envelope]:
        meta = obj.get("metadata", {})
        pod = f"{meta.get('namespace', 'default')}/{meta['name']}" if obj["kind"] == "Pod" else None
        node = meta["name"] if obj["kind"] == "Node" else (obj.get("spec", {}).get("nodeName") or None)
        return self.input(inp.ObjectApplied(object=obj, initial=initial), at, node=node, pod=pod)

    def tick(self, at: float, phase: int = 0) -> list[Envelope]:
        t = round(at * SECOND)
        rnd = self._rounds.get(t, 0)
        self._rounds[t] = rnd + 1
        return self.feed(
            make_envelope(ClockTick(round=rnd, phase=phase), run=self.run, t=t, order=[1, rnd], stream="clock")
        )

    def decision(
        self, data: msgspec.Struct, at: float, *, node: str | None = None, pod: str | None = None, rank: int = 99
    ) -> list[Envelope]:
        """What another loop decided at ``at`` (placed after this instant's first tick)."""
        t = round(at * SECOND)
        env = make_envelope(
            data, run=self.run, t=t, order=[1, 0, rank, len(self.emitted)], stream="x", node=node, pod=pod
        )
        return self.feed(env)


def types(envs: list[Envelope]) -> list[str]:
    """Emitted events by type, timer requests left out."""
    return [e.type for e in envs if e.type != "TimerSet"]


def timers(envs: list[Envelope]) -> list[tuple[float, int]]:
    """The ticks asked for: (seconds, phase)."""
    out = []
    for e in envs:
        if e.type == "TimerSet":
            data = msgspec.json.decode(e.data)
            out.append((data["at"] / SECOND, data.get("phase", 0)))
    return out


def node(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}, **status},
    }


def pod(name: str, node: str = "", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"containers": [{"name": "c"}], **spec}
    if node:
        body["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": body,
    }
