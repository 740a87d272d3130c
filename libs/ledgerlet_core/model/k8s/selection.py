"""Label selectors and node selector terms, as the API machinery matches them.

Upstream: ``apimachinery/pkg/labels/selector.go`` (``Requirement.Matches``: In, NotIn,
Exists, DoesNotExist, Gt, Lt), ``metav1.LabelSelectorAsSelector`` (nil selects nothing,
empty selects everything) and ``component-helpers/scheduling/corev1/nodeaffinity``
(``GetRequiredNodeAffinity``: nodeSelector AND the required terms, terms ORed, an empty
term matches nothing, a term that fails to parse never matches). Read by the scheduler
and by the DaemonSet controller (``NodeShouldRunDaemonPod``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from ledgerlet_core.model.k8s.objects import LabelSelector, NodeSelectorTerm, PodSpec

_INT64: Final = (-(2**63), 2**63 - 1)


def int64(text: str) -> int | None:
    """``strconv.ParseInt(text, 10, 64)``: an optional sign and ASCII decimal digits (leading
    zeros allowed), within an int64; None where Go returns an error (superscripts, a
    5,000-digit number: read without converting it)."""
    sign = text[:1] if text[:1] in ("+", "-") else ""
    body = text[len(sign) :]
    if not body or not body.isascii() or not body.isdigit():
        return None
    digits = body.lstrip("0")
    if len(digits) > 19:
        return None
    value = int(sign + (digits or "0"))
    return value if _INT64[0] <= value <= _INT64[1] else None


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    op: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.op
        if op == "In":
            return self.key in labels and labels[self.key] in self.values
        if op == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if op == "Exists":
            return self.key in labels
        if op == "DoesNotExist":
            return self.key not in labels
        # Gt / Lt: both sides parse as int64, or no match
        if self.key not in labels:
            return False
        have = int64(labels[self.key])
        want = int64(self.values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want


@dataclass(frozen=True, slots=True)
class Selector:
    """``labels.Selector``: every requirement holds; ``nothing`` selects no labels at all."""

    reqs: tuple[Requirement, ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.reqs)

    @property
    def empty(self) -> bool:
        """``Selector.Empty()``: no requirements (the nothing selector is not empty)."""
        return not self.nothing and not self.reqs

    def plus(self, extra: Iterable[Requirement]) -> Selector:
        if self.nothing:
            return self
        return Selector((*self.reqs, *extra))


NOTHING: Final = Selector(nothing=True)
EVERYTHING: Final = Selector()
_LABEL_OPS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})
_NODE_OPS: Final = frozenset({"In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"})


_NAME: Final = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_PREFIX: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def valid_label_value(value: str) -> bool:
    """``validation.IsValidLabelValue``: at most 63 characters, alphanumerics with -_. inside."""
    return len(value) <= 63 and bool(_NAME.match(value))


def valid_label_key(key: str) -> bool:
    """``validation.IsQualifiedName``: an optional DNS-subdomain prefix and a name."""
    prefix, _, name = key.rpartition("/")
    if "/" in key and (not prefix or len(prefix) > 253 or not _PREFIX.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_NAME.match(name))


def _requirement(key: str, op: str, values: Iterable[str]) -> Requirement | None:
    """``labels.NewRequirement``'s checks on key, operator and values; None when it refuses."""
    vals = tuple(values)
    if not valid_label_key(key) or not all(valid_label_value(v) for v in vals):
        return None
    if op in ("In", "NotIn") and not vals:
        return None
    if op in ("Exists", "DoesNotExist") and vals:
        return None
    if op in ("Gt", "Lt") and (len(vals) != 1 or int64(vals[0]) is None):
        return None
    return Requirement(key, op, tuple(sorted(set(vals))))


def is_empty(selector: LabelSelector | None) -> bool:
    """No selector, or one with neither labels nor expressions (upstream's ``Selector.Empty()``
    of what ``LabelSelectorAsSelector`` makes of it)."""
    return selector is None or (not selector.match_labels and not selector.match_expressions)


def label_selector(selector: LabelSelector | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil selects nothing, empty everything; a
    requirement that does not parse selects nothing (the API server refuses such pods)."""
    if selector is None:
        return NOTHING
    reqs: list[Requirement] = []
    for k, v in sorted(selector.match_labels.items()):
        r = _requirement(k, "In", (v,))
        if r is None:
            return NOTHING
        reqs.append(r)
    for e in selector.match_expressions:
        r = _requirement(e.key, e.operator, e.values) if e.operator in _LABEL_OPS else None
        if r is None:
            return NOTHING
        reqs.append(r)
    return Selector(tuple(reqs))


# -- node affinity --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class NodeTerm:
    """A ``NodeSelectorTerm``: matchExpressions on labels AND matchFields on the name."""

    labels: Selector | None
    #: (operator, value) on ``metadata.name``
    fields: tuple[tuple[str, str], ...] | None
    #: a requirement that does not parse: the term never matches
    broken: bool = False

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        if self.broken:
            return False
        if self.labels is not None and not self.labels.matches(labels):
            return False
        if self.fields is not None and name:
            for op, value in self.fields:
                if (name == value) != (op == "In"):
                    return False
        return True


def node_term(term: NodeSelectorTerm) -> NodeTerm | None:
    """None for an empty term (it selects nothing and is skipped)."""
    if not term.match_expressions and not term.match_fields:
        return None
    broken = False
    labels: Selector | None = None
    if term.match_expressions:
        reqs = []
        for e in term.match_expressions:
            r = _requirement(e.key, e.operator, e.values) if e.operator in _NODE_OPS else None
            if r is None:
                broken = True
                break
            reqs.append(r)
        labels = Selector(tuple(reqs))
    fields: tuple[tuple[str, str], ...] | None = None
    if term.match_fields:
        parsed = []
        for f in term.match_fields:
            if f.key != "metadata.name" or f.operator not in ("In", "NotIn") or len(f.values) != 1:
                broken = True
                break
            parsed.append((f.operator, f.values[0]))
        fields = tuple(parsed)
    return NodeTerm(labels, fields, broken)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """``GetRequiredNodeAffinity``: the nodeSelector, then the required terms (ORed)."""

    selector: tuple[tuple[str, str], ...] = ()
    #: None: no required node affinity; (): one with only empty terms (matches nothing)
    terms: tuple[NodeTerm, ...] | None = None

    @property
    def anything(self) -> bool:
        return not self.selector and self.terms is None

    def matches(self, labels: Mapping[str, str], name: str) -> bool:
        for k, v in self.selector:
            if labels.get(k) != v:
                return False
        if self.terms is None:
            return True
        return any(t.matches(labels, name) for t in self.terms)

    def node_names(self) -> frozenset[str] | None:
        """``NodeAffinity.PreFilter``'s node set: when every required term names nodes with
        ``metadata.name In``, the union over terms of each term's intersection; None when
        some term (or none) does not restrict by name, so every node is a candidate."""
        if not self.terms:
            return None
        union: set[str] = set()
        for t in self.terms:
            named: set[str] | None = None
            for op, value in t.fields or ():
                if op == "In":
                    named = {value} if named is None else named & {value}
            if named is None:
                return None
            union |= named
        return frozenset(union)


def required_node_affinity(spec: PodSpec) -> RequiredNodeAffinity:
    """``GetRequiredNodeAffinity`` of a pod spec."""
    selector = tuple(sorted(spec.node_selector.items()))
    na = spec.affinity.node_affinity if spec.affinity is not None else None
    if na is None or na.required_during_scheduling_ignored_during_execution is None:
        return RequiredNodeAffinity(selector)
    terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
    return RequiredNodeAffinity(selector, tuple(t for t in (node_term(t) for t in terms) if t is not None))
