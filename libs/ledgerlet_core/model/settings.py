"""Settings are never silently ignored: a name that is no setting is an input error
with the closest one suggested; a real KubeletConfiguration field that ledgerlet does
not model (nothing it decides reads it) is accepted, as a recorded kubelet's
configuration holds dozens of them, and said to be ignored.

Unknown fields of Kubernetes *objects* stay ignored, as the API server ignores them;
this is only for ledgerlet's own settings.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.upstream_settings import UPSTREAM_FEATURE_GATES


def suggestion(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known name, else nothing."""
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    if not close:  # a wrong case is a common slip: evictionhard
        close = [k for k in sorted(known) if k.lower() == name.lower()][:1]
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(name: str, known: Iterable[str], *, what: str, obj: str, field: str) -> InputError:
    return InputError(f"unknown {what} {name!r}{suggestion(name, known)}", obj=obj, field=field)


def check_settings(
    raw: Mapping[str, Any],
    modelled: Iterable[str],
    *,
    what: str,
    obj: str,
    prefix: str,
    upstream: frozenset[str] = frozenset(),
) -> list[str]:
    """Refuse a name in ``raw`` that is neither ``modelled`` nor ``upstream``'s; return
    the upstream fields ledgerlet does not model, each as a warning."""
    modelled = frozenset(modelled)
    ignored = []
    for name in raw:
        if name in modelled:
            continue
        if name in upstream:
            ignored.append(name)
            continue
        raise unknown(str(name), modelled, what=what, obj=obj, field=f"{prefix}.{name}" if prefix else str(name))
    return [
        f"{prefix}.{name}: a {what} ledgerlet does not model (nothing it decides reads it); ignored"
        for name in ignored
        if name not in ("kind", "apiVersion")
    ]


def check_gates(raw: Any, modelled: Iterable[str], *, obj: str, prefix: str) -> list[str]:
    """``featureGates`` as upstream's gate registry reads it: a name no Kubernetes
    component knows is refused in upstream's words (``unrecognized feature gate: X``),
    with the closest suggested; a real gate ledgerlet does not model is accepted, and
    each is returned as a warning. ``modelled``: the gates ledgerlet's code reads."""
    if not isinstance(raw, Mapping):  # converting the section says what is wrong
        return []
    modelled = frozenset(modelled)
    ignored = []
    for name in raw:
        if name in modelled:
            continue
        if name not in UPSTREAM_FEATURE_GATES:
            hint = suggestion(str(name), modelled | UPSTREAM_FEATURE_GATES)
            raise InputError(f"unrecognized feature gate: {name}{hint}", obj=obj, field=f"{prefix}.featureGates.{name}")
        ignored.append(f"{prefix}.featureGates.{name}: a feature gate ledgerlet does not model; ignored")
    return ignored
