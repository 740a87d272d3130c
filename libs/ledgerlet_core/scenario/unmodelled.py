"""What a scenario holds that upstream decides by and ledgerlet does not model.

Nothing is ignored in silence: each such field is named at load (a warning with the object
and the field), kept in the run's record (``ScenarioStarted.unmodelled``), shown by
``explain`` for the pods it touches (:func:`touching`) and refused by ``whatif``. What is
found, by the upstream component that reads it:

* DynamicResources: a pod's ``spec.resourceClaims`` (DRA);
* VolumeBinding, VolumeZone, VolumeRestrictions, NodeVolumeLimits: a claim that is missing
  or not bound, a bound volume with node affinity or zone labels, a ``ReadWriteOncePod``
  claim, generic ephemeral volumes, in-tree disks;
* InterPodAffinity: a ``namespaceSelector`` on namespace labels other than
  ``kubernetes.io/metadata.name`` (namespaces' labels are not modelled);
* another scheduler (``spec.schedulerName``): the pod is left pending;
* the disruption controller: readiness gates and probes of pods a budget selects (a
  started pod counts as Ready);
* the node lifecycle: a Node whose ``status.conditions`` say it is not Ready (every node
  starts Ready);
* kinds not modelled that change a decision (``decode.UNMODELLED_KINDS``: Service,
  LimitRange, StorageClass, CSINode, DRA kinds, ...).

A fleet has hundreds of thousands of pods stamped from few templates: pods are scanned
once per distinct spec (the loader shares equal parts between pods, so a spec is known by
the identity of its parts), and pods without any part that matters are skipped at once.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from dataclasses import field as member
from typing import Any, Final

import msgspec

from ledgerlet_core.contracts import inputs as ev
from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.inputs import UnmodelledField
from ledgerlet_core.contracts.registry import decode_data
from ledgerlet_core.kubelet.config import KubeletConfig
from ledgerlet_core.kubelet.graceful_shutdown import period_requested, shutdown_groups
from ledgerlet_core.kubelet.logind import inhibit_delay
from ledgerlet_core.model.codec import convert, to_builtins
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.decode import UNMODELLED_KINDS, decode_object
from ledgerlet_core.model.k8s.keys import object_key
from ledgerlet_core.model.k8s.objects import (
    AnyObject,
    LabelSelector,
    Node,
    PersistentVolume,
    PersistentVolumeClaim,
    Pod,
    PodDisruptionBudget,
    PodSpec,
    Workload,
)
from ledgerlet_core.model.k8s.selection import Selector, label_selector

DEFAULT_SCHEDULER: Final = "default-scheduler"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
#: in-tree disk sources (attribute, field name): VolumeRestrictions and NodeVolumeLimits read them
IN_TREE_DISKS: Final = (
    ("gce_persistent_disk", "gcePersistentDisk"),
    ("aws_elastic_block_store", "awsElasticBlockStore"),
    ("azure_disk", "azureDisk"),
    ("rbd", "rbd"),
    ("iscsi", "iscsi"),
    ("cinder", "cinder"),
)
ZONE_LABELS: Final = (
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
)
#: how many pods an entry names (``count`` says how many carry it)
NAMED_PODS: Final = 10
_ENCODER: Final = msgspec.json.Encoder()
_UNSUPPORTED: Final = re.compile(r"^(.*): kind '(\w+)' is not modelled by ledgerlet")


@dataclass(frozen=True, slots=True)
class Finding:
    """One unmodelled field of one pod spec (or object)."""

    field: str
    plugin: str
    message: str
    #: ``namespace/claim`` for a claim's finding
    claim: str = ""
    #: a budget's (namespace, name, selector) for a readiness finding
    budget: tuple[str, str, dict[str, Any]] | None = None


@dataclass(slots=True)
class _Entry:
    object: str
    field: str
    plugin: str
    message: str
    count: int = 0
    pods: list[str] = member(default_factory=list)
    specs: set[str] = member(default_factory=set)
    claims: set[str] = member(default_factory=set)
    nodes: list[str] = member(default_factory=list)
    namespace: str = ""
    selector: dict[str, Any] | None = None

    def record(self) -> UnmodelledField:
        return UnmodelledField(
            object=self.object,
            field=self.field,
            plugin=self.plugin,
            message=self.message,
            count=self.count,
            pods=self.pods,
            specs=sorted(self.specs),
            claims=sorted(self.claims),
            nodes=self.nodes,
            namespace=self.namespace,
            selector=self.selector,
        )


@dataclass(slots=True)
class Context:
    """What a pod's findings depend on beyond its spec."""

    claims: dict[str, PersistentVolumeClaim] = member(default_factory=dict)
    volumes: dict[str, PersistentVolume] = member(default_factory=dict)
    #: PersistentVolume name by the claim its ``claimRef`` names
    claimed: dict[str, str] = member(default_factory=dict)
    budgets: list[tuple[str, str, Selector, dict[str, Any]]] = member(default_factory=list)

    def add(self, obj: AnyObject) -> None:
        if isinstance(obj, PersistentVolumeClaim):
            self.claims[object_key(obj.metadata.namespace, obj.metadata.name)] = obj
        elif isinstance(obj, PersistentVolume):
            self.volumes[obj.metadata.name] = obj
            ref = obj.spec.claim_ref or {}
            if ref.get("name"):
                self.claimed[object_key(ref.get("namespace"), ref["name"])] = obj.metadata.name
        elif isinstance(obj, PodDisruptionBudget) and obj.spec.selector is not None:
            raw = to_builtins(obj.spec.selector)
            ns = obj.metadata.namespace or "default"
            self.budgets.append((ns, obj.metadata.name, label_selector(obj.spec.selector), raw))


# -- a pod spec's findings -------------------------------------------------------------------------
def _pod_terms(spec: PodSpec) -> list[tuple[str, Any]]:
    """(field, term) of every pod (anti-)affinity term."""
    a = spec.affinity
    if a is None:
        return []
    out: list[tuple[str, Any]] = []
    for kind, block in (("podAffinity", a.pod_affinity), ("podAntiAffinity", a.pod_anti_affinity)):
        if block is None:
            continue
        for i, t in enumerate(block.required_during_scheduling_ignored_during_execution):
            out.append((f"spec.affinity.{kind}.requiredDuringSchedulingIgnoredDuringExecution[{i}]", t))
        for i, w in enumerate(block.preferred_during_scheduling_ignored_during_execution):
            where = f"spec.affinity.{kind}.preferredDuringSchedulingIgnoredDuringExecution[{i}].podAffinityTerm"
            out.append((where, w.pod_affinity_term))
    return out


def _namespace_label_selectors(spec: PodSpec) -> list[tuple[str, LabelSelector]]:
    """Terms whose namespaceSelector reads namespace labels ledgerlet does not know."""
    out = []
    for where, t in _pod_terms(spec):
        sel = t.namespace_selector
        if sel is None:
            continue
        keys = set(sel.match_labels) | {r.key for r in sel.match_expressions}
        if keys - {NAMESPACE_NAME_LABEL}:
            out.append((f"{where}.namespaceSelector", sel))
    return out


def _probed(spec: PodSpec) -> bool:
    return any(c.readiness_probe is not None for c in spec.containers)


def relevant(spec: PodSpec) -> bool:
    """Whether a pod spec has any part this module reads (most have none)."""
    return bool(
        spec.volumes
        or spec.resource_claims
        or spec.affinity is not None
        or (spec.scheduler_name and spec.scheduler_name != DEFAULT_SCHEDULER)
        or spec.readiness_gates
        or _probed(spec)
    )


def spec_signature(namespace: str, spec: PodSpec) -> str:
    """The parts of a pod spec its spec findings come from (equal for every pod stamped
    from one template), as a short hash: how ``explain`` finds the entries of a pod."""
    volumes = [
        v for v in spec.volumes if v.ephemeral is not None or any(getattr(v, a) is not None for a, _ in IN_TREE_DISKS)
    ]
    parts = (
        namespace,
        spec.scheduler_name,
        spec.resource_claims,
        volumes,
        [s for _, s in _namespace_label_selectors(spec)],
        spec.readiness_gates,
        [c.readiness_probe is not None for c in spec.containers],
    )
    return hashlib.sha256(_ENCODER.encode(parts)).hexdigest()[:16]


def spec_findings(spec: PodSpec, *, prefix: str = "spec.") -> list[Finding]:
    """What a pod spec carries that upstream's scheduler reads and ledgerlet does not
    (the findings that depend on nothing else)."""
    out: list[Finding] = []
    if spec.resource_claims:
        out.append(
            Finding(
                f"{prefix}resourceClaims",
                "DynamicResources",
                "the pod is placed as if it claimed no device",
            )
        )
    for i, v in enumerate(spec.volumes):
        if v.ephemeral is not None:
            out.append(
                Finding(
                    f"{prefix}volumes[{i}].ephemeral",
                    "VolumeBinding",
                    "a generic ephemeral volume's claim is bound or provisioned by the scheduler; the pod is "
                    "placed as if it had no such volume",
                )
            )
        for attr, name in IN_TREE_DISKS:
            if getattr(v, attr) is not None:
                out.append(
                    Finding(
                        f"{prefix}volumes[{i}].{name}",
                        "VolumeRestrictions",
                        "disk conflicts between pods on a node and per-node volume limits are not checked",
                    )
                )
    for where, _ in _namespace_label_selectors(spec):
        out.append(
            Finding(
                where.replace("spec.", prefix, 1),
                "InterPodAffinity",
                "namespaces' labels are unknown here (only kubernetes.io/metadata.name): this selector matches "
                "no namespace",
            )
        )
    if spec.scheduler_name and spec.scheduler_name != DEFAULT_SCHEDULER:
        out.append(
            Finding(
                f"{prefix}schedulerName",
                spec.scheduler_name,
                f"the pod is for scheduler {spec.scheduler_name!r}, which ledgerlet does not run: it stays pending",
            )
        )
    return out


def claim_findings(namespace: str, spec: PodSpec, ctx: Context, *, prefix: str = "spec.") -> list[Finding]:
    """The pod's PersistentVolumeClaims as VolumeBinding, VolumeZone and VolumeRestrictions
    would read them."""
    out: list[Finding] = []
    for i, v in enumerate(spec.volumes):
        src = v.persistent_volume_claim
        if src is None:
            continue
        key = f"{namespace}/{src.claim_name}"
        where = f"{prefix}volumes[{i}].persistentVolumeClaim"
        claim = ctx.claims.get(key)
        if claim is None:
            out.append(
                Finding(
                    where,
                    "VolumeBinding",
                    "the claim is not in the scenario: upstream keeps the pod pending until it exists; ledgerlet "
                    "places it",
                    key,
                )
            )
            continue
        if "ReadWriteOncePod" in claim.spec.access_modes:
            out.append(
                Finding(
                    where,
                    "VolumeRestrictions",
                    "a ReadWriteOncePod claim admits one pod at a time; not checked",
                    key,
                )
            )
        pv_name = claim.spec.volume_name or ctx.claimed.get(key, "")
        pv = ctx.volumes.get(pv_name)
        if pv is None:
            out.append(
                Finding(
                    where,
                    "VolumeBinding",
                    "the claim is not bound to a PersistentVolume: upstream binds or provisions it where it can "
                    "(its StorageClass's binding mode and topology); ledgerlet places the pod as if it were bound",
                    key,
                )
            )
            continue
        if pv.spec.node_affinity:
            out.append(
                Finding(
                    where,
                    "VolumeBinding",
                    f"its PersistentVolume {pv_name} has spec.nodeAffinity; the pod may be placed where the volume "
                    "is not reachable",
                    key,
                )
            )
        if any(k in pv.metadata.labels for k in ZONE_LABELS):
            out.append(
                Finding(
                    where,
                    "VolumeZone",
                    f"its PersistentVolume {pv_name} is labelled with a zone or region; the zone is not matched",
                    key,
                )
            )
    return out


def readiness_findings(
    namespace: str, labels: Mapping[str, str], spec: PodSpec, ctx: Context, *, prefix: str = "spec."
) -> list[Finding]:
    """Readiness a disruption budget counts and ledgerlet does not model (a started pod
    counts as Ready), for pods a budget selects."""
    if not (spec.readiness_gates or _probed(spec)) or not ctx.budgets:
        return []
    out: list[Finding] = []
    for ns, name, selector, raw in ctx.budgets:
        if ns != namespace or not selector.matches(labels):
            continue
        if spec.readiness_gates:
            out.append(
                Finding(
                    f"{prefix}readinessGates",
                    "disruption-controller",
                    f"PodDisruptionBudget {ns}/{name} counts Ready pods; its readiness gates are not read (a "
                    "started pod counts as Ready)",
                    budget=(ns, name, raw),
                )
            )
        if _probed(spec):
            i = next(i for i, c in enumerate(spec.containers) if c.readiness_probe is not None)
            out.append(
                Finding(
                    f"{prefix}containers[{i}].readinessProbe",
                    "disruption-controller",
                    f"PodDisruptionBudget {ns}/{name} counts Ready pods; its readiness probe is not run (a started "
                    "pod counts as Ready)",
                    budget=(ns, name, raw),
                )
            )
    return out


# -- the scan --------------------------------------------------------------------------------------
class _Scan:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.entries: dict[tuple[str, str, str], _Entry] = {}
        self._memo: dict[tuple[Any, ...], tuple[str, list[Finding]]] = {}

    def _entry(self, obj: str, f: Finding) -> _Entry:
        key = (f.field, f.plugin, f.message)
        e = self.entries.get(key)
        if e is None:
            e = self.entries[key] = _Entry(obj, f.field, f.plugin, f.message)
            if f.budget is not None:
                e.namespace, e.selector = f.budget[0], f.budget[2]
        return e

    def pod(self, label: str, key: str, namespace: str, labels: Mapping[str, str], spec: PodSpec) -> None:
        if not relevant(spec):
            return
        memo_key = (
            namespace,
            _part(spec.volumes),
            _part(spec.resource_claims),
            _part(spec.affinity),
            spec.scheduler_name,
            _part(spec.readiness_gates),
            _part(spec.containers),
            _part(labels),
        )
        hit = self._memo.get(memo_key)
        if hit is None:
            found = spec_findings(spec)
            found += claim_findings(namespace, spec, self.ctx)
            found += readiness_findings(namespace, labels, spec, self.ctx)
            hit = self._memo[memo_key] = (spec_signature(namespace, spec) if found else "", found)
        signature, found = hit
        for f in found:
            e = self._entry(label, f)
            e.count += 1
            if len(e.pods) < NAMED_PODS:
                e.pods.append(key)
            if f.claim:
                e.claims.add(f.claim)
            else:
                e.specs.add(signature)

    def template(self, label: str, w: Workload) -> None:
        """A workload's pod template: the pods it will create carry the same fields."""
        spec = w.spec.template.spec
        if not relevant(spec) and not w.spec.volume_claim_templates:
            return
        ns = w.metadata.namespace or "default"
        prefix = "spec.template.spec."
        found = spec_findings(spec, prefix=prefix)
        # a StatefulSet's claims come from its volumeClaimTemplates (created per pod, then bound or
        # provisioned by the scheduler): VolumeBinding
        for i, t in enumerate(w.spec.volume_claim_templates):
            found.append(
                Finding(
                    f"spec.volumeClaimTemplates[{i}]",
                    "VolumeBinding",
                    f"each pod's claim {t.metadata.name}-<pod> is bound or provisioned by the scheduler; its pods "
                    "are placed as if their volumes were bound anywhere",
                )
            )
        found += readiness_findings(ns, w.spec.template.metadata.labels, spec, self.ctx, prefix=prefix)
        if not found:
            return
        signature = spec_signature(ns, spec)
        for f in found:
            e = self._entry(label, f)
            e.count += 1
            e.specs.add(signature)

    def node(self, label: str, node: Node) -> None:
        ready = next((c for c in node.status.conditions if c.type == "Ready"), None)
        if ready is None or ready.status == "True":
            return
        f = Finding(
            "status.conditions[Ready]",
            "node-lifecycle-controller",
            "the Node says it is not Ready; ledgerlet starts every node Ready (its kubelet reports), so the "
            "not-ready taints and evictions upstream would apply do not follow",
        )
        e = self._entry(label, f)
        e.count += 1
        e.nodes.append(node.metadata.name)

    def unsupported(self, warnings: Iterable[str]) -> None:
        """Kinds the loader skipped that change a decision (their warnings say which)."""
        for w in warnings:
            m = _UNSUPPORTED.match(w)
            if m is None or m.group(2) not in UNMODELLED_KINDS:
                continue
            label, kind = m.group(1), m.group(2)
            plugin, message = UNMODELLED_KINDS[kind]
            e = _Entry(label, "kind", plugin, message, count=1)
            head = label.rsplit(" ", 1)[-1]
            if "/" in head and kind in ("Service", "LimitRange"):
                e.namespace = head.split("/", 1)[0]  # it touches pods of its namespace
            self.entries[(label, plugin, message)] = e


def _part(value: object) -> int | None:
    """A spec part by identity (the loader shares equal parts between pods); an empty one
    (each pod's own empty list) is None."""
    return id(value) if value else None


def _label(kind: str, obj: AnyObject, where: str) -> str:
    ns, name = obj.metadata.namespace, obj.metadata.name
    return f"{where}{kind} {ns}/{name}" if ns else f"{where}{kind} {name}"


def scan(
    objects: Sequence[AnyObject],
    events: Sequence[Any],
    kubelet: KubeletConfig,
    node_configs: Mapping[str, KubeletConfig],
    node_order: Sequence[str],
    warnings: Sequence[str],
) -> tuple[list[UnmodelledField], list[str]]:
    """The scenario's unmodelled fields, and the load warnings that name them (with the
    kubelet configurations under which no shutdown is graceful)."""
    ctx = Context()
    applied: list[tuple[str, AnyObject]] = []
    for e in events:
        data = getattr(e, "data", None)
        if isinstance(data, ev.ObjectApplied) and data.object.get("kind") in (
            "Pod",
            "Node",
            "PersistentVolumeClaim",
            "PersistentVolume",
            "PodDisruptionBudget",
            *Workload.KINDS,
        ):
            obj = decode_object(data.object, label=f"events[{e.index}].apply")
            applied.append((f"events[{e.index}].apply ", obj))
    for obj in objects:
        ctx.add(obj)
    for _, obj in applied:
        ctx.add(obj)
    s = _Scan(ctx)
    for where, obj in [*(("", o) for o in objects), *applied]:
        if isinstance(obj, Pod):
            if not relevant(obj.spec):
                continue  # (most pods: nothing of theirs is read here, so no label is made)
            meta = obj.metadata
            s.pod(_label("Pod", obj, where), obj.key, meta.namespace or "default", meta.labels, obj.spec)
        elif isinstance(obj, Workload):
            s.template(_label(obj.kind, obj, where), obj)
        elif isinstance(obj, Node):
            s.node(_label("Node", obj, where), obj)
    s.unsupported(warnings)
    entries = [e.record() for e in s.entries.values()]
    notes = [warning(e) for e in entries if e.field != "kind"]  # (a skipped kind is warned of by the loader)
    notes += _logind_warnings(kubelet, node_configs, node_order)
    return entries, notes


def warning(e: UnmodelledField) -> str:
    more = f" (and {e.count - 1} more with the same field)" if e.count > 1 else ""
    return f"{e.object}{more}: {e.field}: not modelled ({e.plugin}): {e.message}"


def _logind_warnings(
    kubelet: KubeletConfig, node_configs: Mapping[str, KubeletConfig], node_order: Sequence[str]
) -> list[str]:
    """Nodes whose shutdown manager would fail to start (``logindInhibitDelayMaxAfterReload``)."""
    out = []
    by_config: dict[int, tuple[KubeletConfig, list[str]]] = {}
    for name in node_order:
        config = node_configs.get(name, kubelet)
        by_config.setdefault(id(config), (config, []))[1].append(name)
    for config, nodes in by_config.values():
        groups, _ = shutdown_groups(config)
        if not groups:
            continue
        delay = inhibit_delay(
            period_requested(groups), config.logind_inhibit_delay_max, config.logind_inhibit_delay_max_after_reload
        )
        if delay.error:
            shown = ", ".join(nodes[:5]) + (f" and {len(nodes) - 5} more" if len(nodes) > 5 else "")
            out.append(
                f"node(s) {shown}: logindInhibitDelayMaxAfterReload: the shutdown manager fails to start "
                f"({delay.error}): no shutdown of these nodes is graceful"
            )
    return out


# -- explain ---------------------------------------------------------------------------------------
def touching(entries: Sequence[UnmodelledField], pod: Pod | None, key: str, node: str | None) -> list[UnmodelledField]:
    """The entries that touch one pod (``pod``: its object as the run holds it, if any)."""
    if not entries:
        return []
    namespace = key.split("/", 1)[0]
    signature = spec_signature(namespace, pod.spec) if pod is not None else ""
    labels = pod.metadata.labels if pod is not None else {}
    claims = (
        {f"{namespace}/{v.persistent_volume_claim.claim_name}" for v in pod.spec.volumes if v.persistent_volume_claim}
        if pod is not None
        else set()
    )
    out = []
    for e in entries:
        hit = key in e.pods or bool(claims & set(e.claims)) or (node is not None and node in e.nodes)
        if not hit and e.specs:
            hit = signature in e.specs
            if hit and e.selector is not None:
                hit = e.namespace == namespace and label_selector(convert(e.selector, LabelSelector)).matches(labels)
        elif not hit and e.namespace and not e.specs and not e.claims and not e.nodes:
            hit = e.namespace == namespace and (
                e.selector is None or label_selector(convert(e.selector, LabelSelector)).matches(labels)
            )
        if hit:
            out.append(e)
    return out


def pod_object(events: Sequence[Envelope]) -> Pod | None:
    """The pod's object as the run last applied or created it (None if the run has none)."""
    for e in reversed(events):
        if e.type not in ("ObjectApplied", "ObjectCreated"):
            continue
        data = decode_data(e)
        raw = getattr(data, "object", None)
        if isinstance(raw, dict) and raw.get("kind") == "Pod":
            try:
                obj = decode_object(raw)
            except InputError:
                return None
            return obj if isinstance(obj, Pod) else None
    return None
