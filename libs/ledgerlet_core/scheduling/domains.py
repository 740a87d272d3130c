"""Counts per topology domain, as the PreFilter states of PodTopologySpread and
InterPodAffinity keep them: a map from a topology value (or a key and value) to a count,
held either as a dict (the node-by-node form) or as arrays over the domains the node table
numbers (the form that filters every node at once). Both answer the same questions."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Int64s = npt.NDArray[np.int64]
Bools = npt.NDArray[np.bool_]


class DictCounts:
    """``map[topologyValue]int``: a value is a domain once something was added to it."""

    __slots__ = ("d",)

    def __init__(self, d: dict[str, int] | None = None) -> None:
        self.d = d if d is not None else {}

    def get(self, value: str) -> int:
        return self.d.get(value, 0)

    def add(self, value: str, delta: int) -> None:
        self.d[value] = self.d.get(value, 0) + delta

    def minimum(self) -> int | None:
        return min(self.d.values()) if self.d else None

    def size(self) -> int:
        return len(self.d)

    def copy(self) -> DictCounts:
        return DictCounts(dict(self.d))


class ArrayCounts:
    """The same map over the node table's domain numbers of one topology key."""

    __slots__ = ("counts", "ids", "present")

    def __init__(self, ids: Mapping[str, int], counts: Int64s, present: Bools) -> None:
        self.ids, self.counts, self.present = ids, counts, present

    def get(self, value: str) -> int:
        i = self.ids.get(value)
        return int(self.counts[i]) if i is not None and self.present[i] else 0

    def add(self, value: str, delta: int) -> None:
        i = self.ids[value]
        self.counts[i] += delta
        self.present[i] = True

    def minimum(self) -> int | None:
        if not self.present.any():
            return None
        return int(self.counts[self.present].min())

    def size(self) -> int:
        return int(self.present.sum())

    def copy(self) -> ArrayCounts:
        return ArrayCounts(self.ids, self.counts.copy(), self.present.copy())

    def per_node(self, node_ids: Int64s) -> Int64s:
        """Each node's domain count (0 for a node without the key or outside every domain)."""
        if not self.counts.size:
            return np.zeros(node_ids.size, np.int64)
        safe = np.where(node_ids >= 0, node_ids, 0)
        return np.where((node_ids >= 0) & self.present[safe], self.counts[safe], 0)


DomainCounts = DictCounts | ArrayCounts


class PairCounts:
    """``map[topologyPair]int64`` with zero entries dropped (InterPodAffinity): by key,
    then value; a dict per key (node by node) or an array over the key's domains."""

    __slots__ = ("by_key",)

    def __init__(self, by_key: dict[str, DictCounts | ArrayCounts] | None = None) -> None:
        self.by_key: dict[str, DictCounts | ArrayCounts] = by_key if by_key is not None else {}

    def get(self, key: str, value: str) -> int:
        c = self.by_key.get(key)
        return c.get(value) if c is not None else 0

    def add_dict(self, key: str, value: str, delta: int) -> None:
        """``topologyToMatchedTermCount.update`` on the dict form."""
        c = self.by_key.setdefault(key, DictCounts())
        assert isinstance(c, DictCounts)
        c.add(value, delta)
        if c.d[value] == 0:
            del c.d[value]
            if not c.d:
                del self.by_key[key]

    def add(self, key: str, value: str, delta: int, ids: Mapping[str, int] | None = None) -> None:
        """Add to the pair, whichever form the key is held in (``ids``: the key's domain
        numbers, for a key the array form does not hold yet)."""
        c = self.by_key.get(key)
        if isinstance(c, ArrayCounts):
            c.counts[c.ids[value]] += delta
            return
        if c is None and ids is not None:
            arr = ArrayCounts(ids, np.zeros(len(ids), np.int64), np.ones(len(ids), np.bool_))
            self.by_key[key] = arr
            arr.counts[ids[value]] += delta
            return
        self.add_dict(key, value, delta)

    def empty(self) -> bool:
        """``len(map) == 0``: no pair holds a count other than 0."""
        for c in self.by_key.values():
            if isinstance(c, DictCounts):
                if c.d:
                    return False
            elif c.counts.any():
                return False
        return True

    def blocks(self, labels: Mapping[str, str]) -> bool:
        """Some (key, value) of these labels holds a positive count."""
        for key, c in self.by_key.items():
            value = labels.get(key)
            if value is not None and c.get(value) > 0:
                return True
        return False

    def copy(self) -> PairCounts:
        return PairCounts({k: c.copy() for k, c in self.by_key.items()})


@dataclass(slots=True)
class Domains:
    """One topology key over the node table: each row's domain number (-1 without the key)."""

    ids: Int64s
    values: list[str] = field(default_factory=list)
    id_of: dict[str, int] = field(default_factory=dict)
    #: made when first asked for (a table's domains are dropped, not changed, when labels change)
    _bucket: Int64s | None = None
    _labelled: Bools | None = None

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def labelled(self) -> Bools:
        """The rows that have the key."""
        if self._labelled is None:
            self._labelled = self.ids >= 0
        return self._labelled

    @property
    def bucket(self) -> Int64s:
        """Each row's domain, a row without the key under "" (a new number when no row has "")."""
        if self._bucket is None:
            self._bucket = np.where(self.ids >= 0, self.ids, self.id_of.get("", self.n))
        return self._bucket

    def counts(self, rows: Bools, weights: Int64s) -> Int64s:
        """Summed ``weights`` of the rows selected, per domain."""
        ids = self.ids[rows]
        return np.bincount(ids, weights=weights[rows], minlength=self.n).astype(np.int64)[: self.n]

    def present(self, rows: Bools) -> Bools:
        return np.bincount(self.ids[rows], minlength=self.n)[: self.n] > 0


def domains_of(labels_by_row: Iterable[Mapping[str, str]], key: str) -> Domains:
    ids = []
    d = Domains(np.zeros(0, np.int64))
    for labels in labels_by_row:
        v = labels.get(key)
        if v is None:
            ids.append(-1)
            continue
        i = d.id_of.get(v)
        if i is None:
            i = d.id_of[v] = len(d.values)
            d.values.append(v)
        ids.append(i)
    d.ids = np.array(ids, np.int64)
    return d
