"""A scenario as the stream of input events the driver publishes, in order.

Inputs at one instant keep the file's order: ScenarioStarted, the ``objects`` list,
the ``usage`` entries, then the ``events`` at that time. Their order key is
``[0, index]`` with the index counting over the whole feed.

The pods bound in ``objects`` and their ``usage`` entries travel a node at a time
(:mod:`ledgerlet_core.contracts.batch`): a fleet's starting state is mostly them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, cast

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.batch import iter_batched
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope, node_stream, pod_stream
from ledgerlet_core.model.codec import object_json
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import AnyObject, Node, Pod
from ledgerlet_core.scenario.load import Scenario


def routing(data: object) -> tuple[str, str | None, str | None]:
    """Stream, node and pod of an input event."""
    if isinstance(data, ev.ObjectApplied):
        obj = data.object
        kind = obj.get("kind", "")
        meta = obj.get("metadata", {})
        name = meta.get("name", "")
        if kind == "Node":
            return node_stream(name), name, None
        if kind == "Pod":
            key = f"{meta.get('namespace', 'default')}/{name}"
            node = obj.get("spec", {}).get("nodeName") or None
            return pod_stream(key), node, key
        ns = meta.get("namespace")
        return f"object/{kind}/{ns + '/' if ns else ''}{name}", None, None
    if isinstance(data, ev.ObjectDeleted):
        if data.kind == "Pod":
            key = object_key(data.namespace, data.name)
            return pod_stream(key), None, key
        if data.kind == "Node":
            return node_stream(data.name), data.name, None
        return f"object/{data.kind}/{data.namespace + '/' if data.namespace else ''}{data.name}", None, None
    if isinstance(data, ev.ClusterEventObserved):
        return f"observed/{data.event}", None, None
    node = getattr(data, "node", None)
    if isinstance(node, str):
        return node_stream(node), node, None
    if isinstance(data, ev.UsageDeclared):
        if data.key.startswith("node/"):
            return node_stream(data.key[5:]), data.key[5:], None
        return f"usage/{data.key}", None, None
    return "scenario", None, None


def _object_routing(obj: AnyObject) -> tuple[str, str | None, str | None]:
    """Stream, node and pod of an ``objects`` input (as :func:`routing` gives them)."""
    name, ns = obj.metadata.name, obj.metadata.namespace
    if isinstance(obj, Node):
        return node_stream(name), name, None
    if isinstance(obj, Pod):
        key = object_key(ns, name)
        return pod_stream(key), obj.spec.node_name or None, key
    return f"object/{obj.kind}/{ns + '/' if ns else ''}{name}", None, None


def scenario_feed(
    scenario: Scenario, run: str, built: Callable[[str, AnyObject], None] | None = None
) -> Iterator[Envelope]:
    """The inputs, in order (the loader sorts the events by their instant), made as they
    are taken: a fleet's million single inputs, and its batches, are never all held at
    once. ``built`` is told the loaded object each ``objects`` input carries, with the
    input's id, before the input is handed out (what a loop would decode from it: see
    ``Decoded.seed``)."""
    bound = {o.key: o.spec.node_name for o in scenario.objects if isinstance(o, Pod) and o.spec.node_name}

    def node_of(env: Envelope) -> str | None:
        """The node of a bound pod's input (its object, its own usage entry); None for the rest."""
        if env.type == "ObjectApplied":
            return env.node if env.pod is not None and env.t == 0 else None
        if env.type == "UsageDeclared" and env.t == 0:
            return bound.get(env.stream.removeprefix("usage/"))
        return None

    def inputs() -> Iterator[Envelope]:
        index = 0

        def envelope(t: int, data: msgspec.Struct, routing: tuple[str, str | None, str | None]) -> Envelope:
            stream, node, pod = routing
            return make_envelope(data, run=run, t=t, order=[order.INPUTS, index], stream=stream, node=node, pod=pod)

        yield envelope(0, scenario.started_event(), ("scenario", None, None))
        for obj in scenario.objects:
            index += 1
            # (the object as JSON already, straight from its model: see object_json)
            applied = ev.ObjectApplied(object=cast(dict[str, Any], msgspec.Raw(object_json(obj))), initial=True)
            env = envelope(0, applied, _object_routing(obj))
            if built is not None:
                built(env.id, obj)
            yield env
        for key, raw in scenario.usage.items():
            index += 1
            usage = ev.UsageDeclared(key=key, usage=cast(dict[str, Any], raw))  # (JSON already, as it is)
            yield envelope(0, usage, routing(usage))
        for e in scenario.events:
            index += 1
            yield envelope(e.at, e.data, routing(e.data))

    return iter_batched(inputs(), node_of)
