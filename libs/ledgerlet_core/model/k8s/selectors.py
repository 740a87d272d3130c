"""Label selectors. Upstream: ``apimachinery/pkg/apis/meta/v1/helpers.go: LabelSelectorAsSelector``."""

from __future__ import annotations

from collections.abc import Mapping

from ledgerlet_core.model.k8s.objects import LabelSelector


def is_empty(selector: LabelSelector | None) -> bool:
    return selector is None or (not selector.match_labels and not selector.match_expressions)


def matches(selector: LabelSelector | None, labels: Mapping[str, str]) -> bool:
    """Whether ``labels`` satisfy the selector (an empty selector matches everything)."""
    if selector is None:
        return False  # a nil selector selects nothing
    for k, v in selector.match_labels.items():
        if labels.get(k) != v:
            return False
    for req in selector.match_expressions:
        has = req.key in labels
        value = labels.get(req.key)
        op = req.operator
        if op == "In" and not (has and value in req.values):
            return False
        if op == "NotIn" and has and value in req.values:
            return False
        if op == "Exists" and not has:
            return False
        if op == "DoesNotExist" and has:
            return False
    return True
