"""A scenario as the stream of input events the driver publishes, in order.

Inputs at one instant keep the file's order: ScenarioStarted, the ``objects`` list,
the ``usage`` entries, then the ``events`` at that time. Their order key is
``[0, index]`` with the index counting over the whole feed.

The pods bound in ``objects`` and their ``usage`` entries travel a node at a time
(:mod:`ledgerlet_core.contracts.batch`): a fleet's starting state is mostly them.
"""

from __future__ import annotations

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts import order
from ledgerlet_core.contracts.batch import batch_inputs
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.registry import make_envelope, node_stream, pod_stream
from ledgerlet_core.model.codec import object_builtins
from ledgerlet_core.model.k8s.objects import AnyObject, Pod
from ledgerlet_core.scenario.load import Scenario


def _routing(data: object) -> tuple[str, str | None, str | None]:
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
            key = f"{data.namespace or 'default'}/{data.name}"
            return pod_stream(key), None, key
        if data.kind == "Node":
            return node_stream(data.name), data.name, None
        return f"object/{data.kind}/{data.namespace + '/' if data.namespace else ''}{data.name}", None, None
    node = getattr(data, "node", None)
    if isinstance(node, str):
        return node_stream(node), node, None
    if isinstance(data, ev.UsageDeclared):
        if data.key.startswith("node/"):
            return node_stream(data.key[5:]), data.key[5:], None
        return f"usage/{data.key}", None, None
    return "scenario", None, None


def scenario_feed(scenario: Scenario, run: str, built: dict[str, AnyObject] | None = None) -> list[Envelope]:
    """The inputs, in order; ``built`` is given the loaded object each ``objects`` input
    carries, by the input's id (what a loop would decode from it: see ``Decoded.seed``)."""
    items: list[tuple[int, msgspec.Struct]] = [(0, scenario.started_event())]
    for obj in scenario.objects:
        items.append((0, ev.ObjectApplied(object=object_builtins(obj), initial=True)))
    for key, raw in scenario.usage.items():
        items.append((0, ev.UsageDeclared(key=key, usage=raw)))
    for e in scenario.events:
        items.append((e.at, e.data))
    bound = {o.key: o.spec.node_name for o in scenario.objects if isinstance(o, Pod) and o.spec.node_name}

    def node_of(env: Envelope) -> str | None:
        """The node of a bound pod's input (its object, its own usage entry); None for the rest."""
        if env.type == "ObjectApplied":
            return env.node if env.pod is not None and env.t == 0 else None
        if env.type == "UsageDeclared" and env.t == 0:
            return bound.get(env.stream.removeprefix("usage/"))
        return None

    out: list[Envelope] = []
    for index, (t, data) in enumerate(items):
        stream, node, pod = _routing(data)
        out.append(
            make_envelope(
                data,
                run=run,
                t=t,
                order=[order.INPUTS, index],
                stream=stream,
                node=node,
                pod=pod,
            )
        )
    if built is not None:
        built.update((env.id, obj) for env, obj in zip(out[1:], scenario.objects, strict=False))
    return batch_inputs(out, node_of)
