"""``--set FIELD=VALUE`` and ``--config FILE`` for what-if runs, applied to a recorded
run's configuration (the ``ScenarioStarted`` event's raw kubelet, scheduler and
controller settings).

``evictionHard.memory.available=500Mi`` changes one key of a map field and keeps the
others; for ``evictionHard`` the others are the effective ones (upstream's defaults when
the run set none), so changing one threshold does not silently drop the rest.
``evictionHard={"memory.available": "500Mi"}`` replaces the whole map, with upstream's
rule that a hard map set without defaults merged zeroes the signals it leaves out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec
import yaml

from ledgerlet_core.controllers.config import CONTROLLER_FIELDS, CONTROLLER_GATES
from ledgerlet_core.kubelet.config import FEATURE_GATE_DEFAULTS, KUBELET_FIELDS, KubeletConfigSpec
from ledgerlet_core.kubelet.eviction.thresholds import effective_eviction_hard
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.settings import suggestion
from ledgerlet_core.model.upstream_settings import UPSTREAM_FEATURE_GATES, UPSTREAM_KUBELET_FIELDS
from ledgerlet_core.scheduling.config import SCHEDULER_FIELDS, SCHEDULER_GATES

SECTIONS = {"kubelet": "kubeletConfig", "scheduler": "schedulerConfig", "controller": "controllerConfig"}
#: what each section may set
FIELDS = {"kubelet": KUBELET_FIELDS, "scheduler": SCHEDULER_FIELDS, "controller": CONTROLLER_FIELDS}
#: the feature gates each section's code reads
GATES = {"kubelet": frozenset(FEATURE_GATE_DEFAULTS), "scheduler": SCHEDULER_GATES, "controller": CONTROLLER_GATES}

#: kubelet fields whose value is a map: the rest of a dotted name is one key
KUBELET_MAP_FIELDS = frozenset(
    f.encode_name for f in msgspec.structs.fields(KubeletConfigSpec) if "dict" in str(f.type)
)


def parse_assignment(text: str) -> tuple[str, str, str | None, Any]:
    """``[section.]field[.key]=value`` -> (section, field, key, value). Values are YAML
    scalars or flow collections: ``500Mi``, ``true``, ``30``, ``{"a": "b"}``."""
    name, sep, raw = text.partition("=")
    if not sep or not name:
        raise InputError("expected FIELD=VALUE", obj="--set", field=text)
    section = "kubelet"
    head, _, rest = name.partition(".")
    if head in SECTIONS and rest:
        section, name = head, rest
    field, _, key = name.partition(".")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise InputError(f"cannot read value {raw!r}: {exc}", obj="--set", field=name) from None
    check_field(section, field, obj="--set", where=name)
    if field == "featureGates":  # one gate (featureGates.X=false) or the whole map
        gates = [key] if key else list(value) if isinstance(value, dict) else []
        check_gates(section, gates, obj="--set", where=name)
    if section == "kubelet" and key and field not in KUBELET_MAP_FIELDS:
        raise InputError(
            f"{field} is not a map field; map fields are {', '.join(sorted(KUBELET_MAP_FIELDS))}",
            obj="--set",
            field=name,
        )
    return section, field, key or None, value


def check_field(section: str, field: str, *, obj: str, where: str) -> None:
    """A what-if may set only what ledgerlet models: anything else would change no
    decision, and "no decision changes" would then be a lie."""
    known = FIELDS[section]
    if field in known:
        return
    if section == "kubelet" and field in UPSTREAM_KUBELET_FIELDS:
        raise InputError(
            f"{field} is a KubeletConfiguration field ledgerlet does not model: nothing it decides reads it",
            obj=obj,
            field=where,
        )
    # a kubelet name may be a section misspelt: `schedular.x` on --set, `kubeletConfg:` in a file
    sections = {f"{s}." for s in SECTIONS if s != "kubelet"} | set(SECTIONS.values())
    choices = known | (sections if section == "kubelet" else set())
    hint = suggestion(field, choices)
    raise InputError(f"unknown {SECTIONS[section]} field {field!r}{hint}", obj=obj, field=where)


def check_gates(section: str, gates: Iterable[Any], *, obj: str, where: str) -> None:
    """As :func:`check_field` for ``featureGates``: a real gate nothing reads would change
    no decision, so it is refused as a misspelt one is (with the closest suggested)."""
    for gate in gates:
        if gate in GATES[section]:
            continue
        if gate in UPSTREAM_FEATURE_GATES:
            raise InputError(
                f"{gate} is a feature gate ledgerlet does not model: nothing it decides reads it", obj=obj, field=where
            )
        hint = suggestion(str(gate), GATES[section] | UPSTREAM_FEATURE_GATES)
        raise InputError(f"unrecognized feature gate: {gate}{hint}", obj=obj, field=where)


def _check_file_section(section: str, values: Mapping[str, Any], *, prefix: str) -> None:
    for field, value in values.items():
        check_field(section, field, obj="--config", where=f"{prefix}{field}")
        if field == "featureGates" and isinstance(value, Mapping):
            check_gates(section, value, obj="--config", where=f"{prefix}{field}")


def apply_overrides(
    configs: Mapping[str, Mapping[str, Any]], assignments: list[str], file_config: Mapping[str, Any] | None = None
) -> dict[str, dict[str, Any]]:
    """New raw configurations by section (``kubeletConfig``, ``schedulerConfig``,
    ``controllerConfig``): a ``--config`` file's sections merged first (a file with no
    section keys is a kubelet configuration), then every ``--set`` in order."""
    out = {k: dict(v) for k, v in configs.items()}
    for sec in SECTIONS.values():
        out.setdefault(sec, {})
    if file_config:
        if any(k in SECTIONS.values() for k in file_config):
            for sec, values in file_config.items():
                if sec not in SECTIONS.values():
                    hint = suggestion(str(sec), SECTIONS.values())
                    raise InputError(f"unknown section {sec!r}{hint}", obj="--config", field=sec)
                if values is not None and not isinstance(values, Mapping):
                    raise InputError("expected a mapping of settings", obj="--config", field=sec)
                short = next(k for k, v in SECTIONS.items() if v == sec)
                _check_file_section(short, values or {}, prefix=f"{sec}.")
                out[sec].update(values or {})
        else:
            _check_file_section("kubelet", file_config, prefix="")
            out["kubeletConfig"].update(file_config)
    for text in assignments:
        section, field, key, value = parse_assignment(text)
        target = out[SECTIONS[section]]
        if key is None:
            target[field] = value
            continue
        current = target.get(field)
        if field == "evictionHard":
            current = effective_eviction_hard(current, merge_defaults=bool(target.get("mergeDefaultEvictionSettings")))
        updated = dict(current or {})
        if value is None or value == "":
            updated.pop(key, None)
        else:
            updated[key] = value if not isinstance(value, int | float) or isinstance(value, bool) else str(value)
        target[field] = updated
    return out
