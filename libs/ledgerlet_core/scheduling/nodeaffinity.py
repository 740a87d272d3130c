"""NodeAffinity: the pod's nodeSelector and required node affinity (filter), its preferred
terms (score).

Upstream ``framework/plugins/nodeaffinity/node_affinity.go``: ``PreFilter`` (a node set
when every required term names nodes with ``metadata.name In``; "pod affinity terms
conflict" when those sets leave none), ``Filter`` (UnschedulableAndUnresolvable "node(s)
didn't match Pod's node affinity/selector"), ``PreScore`` (skipped without preferred
terms), ``Score`` (the summed weights of the preferred terms the node matches) and
``NormalizeScore`` (``helper.DefaultNormalizeScore``: scaled so the best node has 100).
The matching itself is :mod:`.terms`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from ledgerlet_core.model.k8s.selection import NodeTerm

NAME: Final = "NodeAffinity"
ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"
MAX_NODE_SCORE: Final = 100


def preferred_score(terms: Sequence[tuple[int, NodeTerm]], labels: Mapping[str, str], name: str) -> int:
    return sum(w for w, t in terms if t.matches(labels, name))


def default_normalize(scores: Sequence[int], reverse: bool = False) -> list[int]:
    """``helper.DefaultNormalizeScore``."""
    high = max(scores, default=0)
    if high <= 0:
        return [MAX_NODE_SCORE if reverse else s for s in scores]
    out = [MAX_NODE_SCORE * s // high for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out
