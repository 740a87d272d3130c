"""The API-server validation ledgerlet enforces on scenario objects.

Upstream: ``pkg/apis/core/validation/validation.go`` (``ValidatePodCreate``,
``ValidateObjectMeta``, ``validateContainers``, ``ValidateResourceRequirements``) and
``apimachinery/pkg/util/validation`` for name formats. Messages follow upstream's
``field.Error`` texts where they exist. Only what some control loop depends on is
checked; everything else is accepted as the API server would accept it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from ledgerlet_core.model.annotations import EXIT_AFTER_ANNOTATION, exit_after_problem
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.k8s.objects import AnyObject, Container, Node, Pod, PodSpec, ResourceQuota, Workload

_DNS1123_LABEL: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN: Final = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.match(value))


def is_dns1123_label(value: str) -> bool:
    return len(value) <= 63 and bool(_DNS1123_LABEL.match(value))


def validate_object(obj: AnyObject) -> None:
    """Raise :class:`InputError` (field set) for what the API server would refuse."""
    validate_metadata(obj)
    if isinstance(obj, Pod):
        validate_pod_spec(obj.spec, "spec")
    elif isinstance(obj, Workload):
        _validate_exit_after(obj.spec.template.metadata.annotations, "spec.template.metadata.annotations")
        validate_pod_spec(obj.spec.template.spec, "spec.template.spec")
        for field, value in (("replicas", obj.spec.replicas), ("parallelism", obj.spec.parallelism)):
            if value is not None and value < 0:
                raise InputError(f"Invalid value: {value}: must be greater than or equal to 0", field=f"spec.{field}")
    elif isinstance(obj, ResourceQuota):
        for resource, q in obj.spec.hard.items():
            if q.sign() < 0:  # ValidateResourceQuota: ValidateResourceQuantityValue
                raise InputError(
                    f'Invalid value: "{q}": must be greater than or equal to 0', field=f"spec.hard.{resource}"
                )
    elif isinstance(obj, Node):
        for resource, q in (*obj.status.capacity.items(), *obj.status.allocatable.items()):
            if q.sign() < 0:
                raise InputError(
                    f'Invalid value: "{q}": must be greater than or equal to 0', field=f"status.capacity.{resource}"
                )


def validate_metadata(obj: AnyObject) -> None:
    """:func:`validate_object`'s checks of the object's metadata alone (a pod's spec is
    checked once per shape: scenario/pod_shapes.py)."""
    name = obj.metadata.name
    if not name:
        raise InputError("name or generateName is required", field="metadata.name")
    if not is_dns1123_subdomain(name):
        raise InputError(f'Invalid value: "{name}": {_SUBDOMAIN_MSG}', field="metadata.name")
    ns = obj.metadata.namespace
    if ns and not is_dns1123_label(ns):
        raise InputError(f'Invalid value: "{ns}": {_LABEL_MSG}', field="metadata.namespace")
    if isinstance(obj, Pod):
        _validate_exit_after(obj.metadata.annotations, "metadata.annotations")


def _validate_exit_after(annotations: Mapping[str, str], path: str) -> None:
    raw = annotations.get(EXIT_AFTER_ANNOTATION)
    problem = exit_after_problem(raw) if raw is not None else None
    if problem is not None:
        raise InputError(problem, field=f"{path}[{EXIT_AFTER_ANNOTATION}]")


def validate_pod_spec(spec: PodSpec, path: str) -> None:
    if not spec.containers:
        raise InputError("Required value", field=f"{path}.containers")
    seen: set[str] = set()
    for group, containers in (("initContainers", spec.init_containers), ("containers", spec.containers)):
        for i, c in enumerate(containers):
            where = f"{path}.{group}[{i}]"
            if not c.name:
                raise InputError("Required value", field=f"{where}.name")
            if not is_dns1123_label(c.name):
                raise InputError(f'Invalid value: "{c.name}": {_LABEL_MSG}', field=f"{where}.name")
            if c.name in seen:
                raise InputError(f'Duplicate value: "{c.name}"', field=f"{where}.name")
            seen.add(c.name)
            if c.restart_policy is not None and (group == "containers" or c.restart_policy != "Always"):
                raise InputError(
                    f'Unsupported value: "{c.restart_policy}": supported values: "Always"',
                    field=f"{where}.restartPolicy",
                )
            _validate_resources(c, where)
    if spec.termination_grace_period_seconds is not None and spec.termination_grace_period_seconds < 0:
        raise InputError(
            f"Invalid value: {spec.termination_grace_period_seconds}: must be greater than or equal to 0",
            field=f"{path}.terminationGracePeriodSeconds",
        )
    if spec.restart_policy and spec.restart_policy not in ("Always", "OnFailure", "Never"):
        raise InputError(
            f'Unsupported value: "{spec.restart_policy}": supported values: "Always", "OnFailure", "Never"',
            field=f"{path}.restartPolicy",
        )
    if spec.overhead:
        for resource, q in spec.overhead.items():
            if q.sign() < 0:
                raise InputError(
                    f'Invalid value: "{q}": must be greater than or equal to 0', field=f"{path}.overhead.{resource}"
                )


def _validate_resources(c: Container, where: str) -> None:
    res = c.resources
    for kind, values in (("requests", res.requests), ("limits", res.limits)):
        for resource, q in values.items():
            if q.sign() < 0:
                raise InputError(
                    f'Invalid value: "{q}": must be greater than or equal to 0',
                    field=f"{where}.resources.{kind}.{resource}",
                )
    for resource, req in res.requests.items():
        lim = res.limits.get(resource)
        if lim is not None and req > lim:
            raise InputError(
                f'Invalid value: "{req}": must be less than or equal to {resource} limit of {lim}',
                field=f"{where}.resources.requests.{resource}",
            )
