"""``usage`` entries for pods and workloads the scenario never declares.

A pod's entry (``NAMESPACE/POD``) applies to the pod of that name, a workload's
(``NAMESPACE/KIND/NAME``) to every pod it owns. An entry naming nothing that the
``objects`` or an ``apply`` event declare was accepted silently (a million of them
too). It can still be meant: controllers make pods under names of their own
(``web-0`` of a StatefulSet, ledgerlet's deterministic suffixes) and imported pods name
owners that were not recorded. So such entries are a warning, counted once; but an
entry in a namespace where nothing at all is declared can never apply (every pod,
made by a controller or not, lives in its workload's namespace): that is surely a
typo, and an input error naming the closest namespace there is.

The look-ups cost one per usage entry, against the index the loader keeps of the
objects anyway; only when some entry names nothing are the objects walked (for their
namespaces, and for suggestions).
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable, Mapping
from typing import Any, Final

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.objects import Workload

#: entries named in the warning (the rest are counted)
SHOWN: Final = 5
#: a namespace's pods are searched for a suggestion only when there are no more than this
_SUGGEST_AMONG: Final = 2000


def _key(kind: str, namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if kind == "Pod" else f"{namespace}/{kind}/{name}"


def check_usage_targets(
    keys: Iterable[Any], declared: Collection[tuple[str, str, str]], applied: Iterable[Mapping[str, Any]]
) -> list[str]:
    """Warnings for the pod and workload entries of ``keys`` that no object
    (``declared``: ``(kind, namespace, name)`` of each) or applied object declares;
    :class:`InputError` for one whose namespace holds nothing that makes pods."""
    from_events = set()
    for obj in applied:
        meta = obj.get("metadata") or {}
        kind = obj.get("kind")
        if kind == "Pod" or kind in Workload.KINDS:
            from_events.add((str(kind), str(meta.get("namespace") or "default"), str(meta.get("name", ""))))
    missing: list[str] = []
    for key in keys:  # (a fleet has one per pod: kept to a split and a look-up)
        parts = key.split("/") if isinstance(key, str) else ()
        if len(parts) == 2:
            target = ("Pod", parts[0], parts[1])
            if parts[0] != "node" and target not in declared and target not in from_events:
                missing.append(key)
        elif len(parts) == 3:
            target = (parts[1], parts[0], parts[2])
            if target not in declared and target not in from_events:
                missing.append(key)
    if not missing:
        return []
    owners = {t for t in (*declared, *from_events) if t[0] == "Pod" or t[0] in Workload.KINDS}
    namespaces = {namespace for _, namespace, _ in owners}
    for key in missing:
        namespace = key.partition("/")[0]
        if namespace not in namespaces:
            close = difflib.get_close_matches(namespace, sorted(namespaces), n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(
                f"no pod or workload is in namespace {namespace!r} (objects or events), so this entry can "
                f"never apply{hint}",
                obj="spec",
                field=f"usage.{key}",
            )
    shown = [f"{key}{_closest(key, owners)}" for key in missing[:SHOWN]]
    more = f", and {len(missing) - SHOWN:,} more" if len(missing) > SHOWN else ""
    what = "entry names a pod or workload" if len(missing) == 1 else f"{len(missing):,} entries name pods or workloads"
    return [
        f"usage: {what} that no object or event declares: {', '.join(shown)}{more}; such an entry applies "
        "only to pods a controller makes under that name, or that name such an owner"
    ]


def _closest(key: str, owners: set[tuple[str, str, str]]) -> str:
    """`` (did you mean ...?)`` among the declared keys of the entry's namespace."""
    namespace = key.partition("/")[0]
    candidates = [_key(*t) for t in owners if t[1] == namespace]
    if not candidates or len(candidates) > _SUGGEST_AMONG:
        return ""
    close = difflib.get_close_matches(key, candidates, n=1, cutoff=0.8)
    return f" (did you mean {close[0]}?)" if close else ""
