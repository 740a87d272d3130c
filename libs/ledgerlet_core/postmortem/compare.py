"""Comparing two derivations of one run.

``verify``: the events a store recorded against the events the control loops derive
again from the recorded inputs; same run id, so the same ids, and every field must
match. ``decision_diff``: a recorded run against a what-if re-run under another
configuration; ids differ, so decisions are paired by what they did to which pod.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, expand_observed, observation_members, observed_count
from ledgerlet_core.contracts.registry import DECISION, INPUT
from ledgerlet_core.model.duration import SECOND

MismatchKind = Literal["changed", "missing", "unexpected"]

#: envelope fields a verified replay compares, besides ``data``
_FIELDS = ("type", "t", "order", "stream", "kind", "node", "pod", "causes")


@dataclass(frozen=True, slots=True)
class Mismatch:
    """One event the store holds that the re-derivation does not give, or the reverse.

    ``missing``: recorded, not derived again (a tampered or invented record);
    ``unexpected``: derived, not recorded (a record removed, or inputs that changed);
    ``changed``: both, with ``fields`` naming what differs.
    """

    kind: MismatchKind
    id: str
    type: str
    t: int
    node: str | None
    pod: str | None
    fields: tuple[str, ...] = ()
    recorded: Envelope | None = None
    derived: Envelope | None = None

    def describe(self) -> str:
        where = " ".join(x for x in (self.node and f"node={self.node}", self.pod and f"pod={self.pod}") if x)
        head = f"{self.kind:<10} {self.type} t={self.t / SECOND:g}s {where} id={self.id}".rstrip()
        if self.kind != "changed" or self.recorded is None or self.derived is None:
            return head
        lines = [head]
        for name in self.fields:
            lines.append(f"    {name}: recorded {_show(self.recorded, name)} / derived {_show(self.derived, name)}")
        return "\n".join(lines)


def _value(env: Envelope, name: str) -> Any:
    if name == "data":
        return json.loads(bytes(env.data))
    return getattr(env, name)


def _show(env: Envelope, name: str, limit: int = 300) -> str:
    text = json.dumps(_value(env, name), sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def differing_fields(recorded: Envelope, derived: Envelope) -> tuple[str, ...]:
    out = [name for name in _FIELDS if getattr(recorded, name) != getattr(derived, name)]
    if bytes(recorded.data) != bytes(derived.data) and _value(recorded, "data") != _value(derived, "data"):
        out.append("data")
    return tuple(out)


class RecordedRow(Protocol):
    """A stored event as its row holds it, compared with what is derived again without
    being made into an :class:`Envelope` first (a store's ``iter_run_rows``): only a row
    that differs, or is left unpaired, is made one (:meth:`envelope`), to say how."""

    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def t(self) -> int: ...

    def same_as(self, derived: Envelope) -> bool:
        """Whether ``derived`` is the event stored here, every compared field byte for byte."""
        ...

    def members(self) -> int:
        """The stored events it stands for (a tick's observations: one each)."""
        ...

    def envelope(self) -> Envelope:
        """The event as stored."""
        ...


Recorded = Envelope | RecordedRow


def verify(recorded: Iterable[Envelope], derived: Mapping[str, Envelope]) -> list[Mismatch]:
    """Every recorded decision and internal event against its re-derivation, by id.

    Inputs are what the re-derivation was fed, so they are not compared with themselves;
    a tampered input shows as the decisions that no longer follow from it.
    """
    verifier = Verifier()
    verifier.recorded(recorded)
    verifier.derived(derived.values())
    return verifier.finish()


class Verifier:
    """:func:`verify` as the events come: the recorded ones (read from the store a page at
    a time) and the derived ones (as the loops make them) are paired by id as soon as both
    are there, so only those still waiting for their pair are held, never a whole run.
    Inputs and how a run ended are not compared (what the re-derivation was fed, and what
    drove it). The recorded events may come as their rows (:class:`RecordedRow`)."""

    def __init__(self) -> None:
        self._recorded: dict[str, Recorded] = {}
        self._derived: dict[str, Envelope] = {}
        #: ids paired already (an event derived or read again is not unpaired)
        self._paired: set[str] = set()
        self.mismatches: list[Mismatch] = []
        self.compared = 0
        #: the latest virtual time each side has reached
        self.recorded_t = -1
        self.derived_t = -1

    def recorded(self, envelopes: Iterable[Recorded]) -> None:
        for env in envelopes:
            if env.kind == INPUT or env.type == "RunEnded":
                continue
            self.recorded_t = max(self.recorded_t, env.t)
            if env.id in self._paired:
                continue
            again = self._derived.pop(env.id, None)
            if again is None:
                self._recorded.setdefault(env.id, env)
            else:
                self._pair(env, again)

    def derived(self, envelopes: Iterable[Envelope]) -> None:
        for env in envelopes:
            if env.kind == INPUT:
                continue
            self.derived_t = max(self.derived_t, env.t)
            if env.id in self._paired:
                continue
            recorded = self._recorded.pop(env.id, None)
            if recorded is None:
                self._derived.setdefault(env.id, env)
            else:
                self._pair(recorded, env)

    def _pair(self, stored: Recorded, derived: Envelope) -> None:
        self._paired.add(stored.id)
        if not isinstance(stored, Envelope):
            if stored.same_as(derived):  # (byte for byte: nothing decoded)
                self.compared += stored.members()
                return
            stored = stored.envelope()  # (it differs: told field by field, as an envelope)
        recorded = stored
        if recorded.type == OBSERVED_BATCH and derived.type == OBSERVED_BATCH:
            if bytes(recorded.data) == bytes(derived.data) and not differing_fields(recorded, derived):
                self.compared += observed_count(recorded.data)
                return
            # told member by member: which observation differs, not that the tick's do
            self._members(observation_members(recorded), observation_members(derived))
            return
        self.compared += 1
        fields = differing_fields(recorded, derived)
        if fields:
            self.mismatches.append(
                Mismatch(
                    "changed",
                    recorded.id,
                    recorded.type,
                    recorded.t,
                    recorded.node,
                    recorded.pod,
                    fields,
                    recorded,
                    derived,
                )
            )

    @property
    def waiting(self) -> int:
        """Events held for their pair."""
        return len(self._recorded) + len(self._derived)

    def _members(self, recorded: Iterable[Envelope], derived: Iterable[Envelope]) -> None:
        """Pair the observations two batches carry, one by one (their ids are their own)."""
        mine = Verifier()
        mine.recorded(recorded)
        mine.derived(derived)
        self.compared += mine.compared
        self.mismatches.extend(mine.finish())

    def finish(self) -> list[Mismatch]:
        """Everything is in: what is left unpaired is missing (recorded only) or unexpected.

        A tick's observations stored one by one (a run recorded before they were carried
        together), or re-derived so (a quick verification leaves quiet nodes out), pair
        with a batch's members: unpaired batches are opened first."""
        batches = [e for e in (*self._recorded.values(), *self._derived.values()) if e.type == OBSERVED_BATCH]
        if batches:
            recorded = [_envelope(e) for e in self._recorded.values()]
            derived = list(self._derived.values())
            self._recorded.clear()
            self._derived.clear()
            self.recorded(expand_observed(recorded))
            self.derived(expand_observed(derived))
        for rec in self._recorded.values():
            env = _envelope(rec)  # (a row left unpaired: told as the event it holds)
            self.mismatches.append(Mismatch("missing", env.id, env.type, env.t, env.node, env.pod, recorded=env))
        for env in self._derived.values():
            self.mismatches.append(Mismatch("unexpected", env.id, env.type, env.t, env.node, env.pod, derived=env))
        self._recorded.clear()
        self._derived.clear()
        self.mismatches.sort(key=_mismatch_order)
        return self.mismatches


def _envelope(recorded: Recorded) -> Envelope:
    return recorded if isinstance(recorded, Envelope) else recorded.envelope()


def _mismatch_order(m: Mismatch) -> tuple[int, tuple[int, ...], str]:
    env = m.recorded or m.derived
    return (m.t, tuple(env.order) if env is not None else (), m.kind)


# -- what-if ---------------------------------------------------------------------

#: decisions that end (or kill in) a pod: what a what-if is asked about
POD_OUTCOMES = ("PodEvicted", "OOMKilled", "PodPreempted", "PodRejected", "PodForceDeleted", "PodTerminated")

ChangeKind = Literal["no longer", "newly", "earlier", "later", "changed"]


@dataclass(frozen=True, slots=True)
class OutcomeChange:
    """One pod's outcome that differs between the recorded run and the what-if run."""

    change: ChangeKind
    type: str
    pod: str
    node: str | None
    recorded_t: int | None
    whatif_t: int | None
    detail: str = ""

    def describe(self) -> str:
        def at(t: int | None) -> str:
            return "-" if t is None else f"{t / SECOND:g}s"

        base = f"{self.change:<9} {self.type:<15} {self.pod} on {self.node or '-'}"
        if self.change == "no longer":
            return f"{base} (was at {at(self.recorded_t)})"
        if self.change == "newly":
            return f"{base} at {at(self.whatif_t)}"
        if self.change in ("earlier", "later"):
            return f"{base}: {at(self.recorded_t)} -> {at(self.whatif_t)}"
        return f"{base} at {at(self.whatif_t)}: {self.detail}"


@dataclass
class DecisionDiff:
    changes: list[OutcomeChange] = field(default_factory=list)
    #: decision counts by type: recorded, what-if
    counts: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: pressure condition changes by node: recorded, what-if (first time a condition went True)
    first_pressure: dict[tuple[str, str], tuple[int | None, int | None]] = field(default_factory=dict)

    @property
    def same(self) -> bool:
        return (
            not self.changes
            and all(a == b for a, b in self.counts.values())
            and all(a == b for a, b in self.first_pressure.values())
        )


def _outcome_key(env: Envelope) -> tuple[str, str]:
    return env.type, env.pod or ""


def _outcome_detail(env: Envelope) -> dict[str, Any]:
    data = json.loads(bytes(env.data))
    keep = ("signal", "threshold", "reason", "container", "preemptor", "gracePeriodSeconds")
    return {k: data[k] for k in keep if k in data}


def decision_diff(recorded: Sequence[Envelope], whatif: Sequence[Envelope]) -> DecisionDiff:
    """Pods no longer evicted, newly evicted, evicted earlier or later, or for another reason."""
    diff = DecisionDiff()
    rec = [e for e in recorded if e.kind == DECISION]
    alt = [e for e in whatif if e.kind == DECISION]
    types = sorted({e.type for e in rec} | {e.type for e in alt})
    for name in types:
        diff.counts[name] = (sum(e.type == name for e in rec), sum(e.type == name for e in alt))

    def outcomes(events: Sequence[Envelope]) -> dict[tuple[str, str], list[Envelope]]:
        out: dict[tuple[str, str], list[Envelope]] = defaultdict(list)
        for e in sorted(events, key=Envelope.sort_key):
            if e.type in POD_OUTCOMES and e.pod:
                out[_outcome_key(e)].append(e)
        return out

    a, b = outcomes(rec), outcomes(alt)
    for key in sorted(set(a) | set(b), key=lambda k: (k[1], POD_OUTCOMES.index(k[0]))):
        xs, ys = a.get(key, []), b.get(key, [])
        for i in range(max(len(xs), len(ys))):
            x = xs[i] if i < len(xs) else None
            y = ys[i] if i < len(ys) else None
            change = _pair(x, y)
            if change is not None:
                diff.changes.append(change)
    diff.changes.sort(key=lambda c: (min(t for t in (c.recorded_t, c.whatif_t) if t is not None), c.pod))

    def pressure(events: Sequence[Envelope]) -> dict[tuple[str, str], int]:
        out: dict[tuple[str, str], int] = {}
        for e in sorted(events, key=Envelope.sort_key):
            if e.type != "NodeConditionChanged" or not e.node:
                continue
            data = json.loads(bytes(e.data))
            if data.get("status") == "True" and data.get("condition") != "Ready":
                out.setdefault((e.node, data["condition"]), e.t)
        return out

    pa, pb = pressure(rec), pressure(alt)
    for key in sorted(set(pa) | set(pb)):
        diff.first_pressure[key] = (pa.get(key), pb.get(key))
    return diff


def _pair(x: Envelope | None, y: Envelope | None) -> OutcomeChange | None:
    if x is None and y is None:
        return None
    if y is None:
        assert x is not None
        return OutcomeChange("no longer", x.type, x.pod or "", x.node, x.t, None)
    if x is None:
        return OutcomeChange("newly", y.type, y.pod or "", y.node, None, y.t)
    if x.t != y.t:
        return OutcomeChange("earlier" if y.t < x.t else "later", x.type, x.pod or "", y.node, x.t, y.t)
    dx, dy = _outcome_detail(x), _outcome_detail(y)
    if dx != dy or x.node != y.node:
        parts = [f"{k} {dx.get(k)!r} -> {dy.get(k)!r}" for k in sorted(set(dx) | set(dy)) if dx.get(k) != dy.get(k)]
        if x.node != y.node:
            parts.insert(0, f"node {x.node} -> {y.node}")
        return OutcomeChange("changed", x.type, x.pod or "", y.node, x.t, y.t, "; ".join(parts))
    return None


#: what a node may have stored and still count as quiet: its observations, and the status
#: its kubelet publishes on its own (when the Node arrives or its machine is declared; a
#: status that changes with pressure comes with a decision)
QUIET_TYPES = frozenset({"NodeObserved", "NodeStatusUpdated"})


def quiet_nodes(types_by_node: Mapping[str, Mapping[str, int]]) -> frozenset[str]:
    """Nodes on which a recorded run decided nothing: observed, and nothing else stored
    about them but their own status. A quick verified replay makes no observations of
    them (the kubelet's passes over a node decide from its observations alone, so on
    these nodes they would decide nothing again); every stored decision is still
    re-derived from the stored inputs, but that nothing more would have been decided on
    a quiet node is taken from the record, not proved."""
    return frozenset(
        node for node, types in types_by_node.items() if "NodeObserved" in types and types.keys() <= QUIET_TYPES
    )
