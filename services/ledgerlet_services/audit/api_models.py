"""The audit API's answers as typed models: the OpenAPI document describes every field a
client gets (generated clients and schemathesis check against it), and FastAPI checks
each answer against its model before it leaves."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")


class Run(_Model):
    run: str
    name: str = Field(description="the scenario's metadata.name")
    start: str = Field(description="RFC 3339 wall-clock time of t=0")
    duration_seconds: float = Field(alias="durationSeconds", description="virtual seconds")
    recorded_at: str = Field(alias="recordedAt")
    source: str = Field(description="the scenario file's name, or what a saved what-if came from")
    status: Literal["completed", "failed", "running", "abandoned"]
    status_reason: str | None = Field(default=None, alias="statusReason")


class Record(_Model):
    """An event as the decision log writes it (docs/scenario-format.md section 5)."""

    id: str
    t: float = Field(description="virtual seconds since the start")
    time: str = Field(description="RFC 3339 wall-clock time")
    type: str
    kind: Literal["input", "internal", "decision"]
    node: str | None = None
    pod: str | None = Field(default=None, description="namespace/name")
    data: dict[str, Any] = Field(description="the type's contract: contracts/events/<kind>/<Type>.v1.schema.json")
    causes: list[str] = Field(description="ids of the events it followed from")
    signals: dict[str, Any] | None = Field(
        default=None, description="for an observation: the signals the kubelet computed from it"
    )


class DecisionsPage(_Model):
    run: str
    items: list[Record]
    next: str | None = Field(description="the cursor of the next page; null at the end")


class Decision(Record):
    inputs: list[Record] = Field(description="the events it cites as causes, observations with their signals")


class PodHistory(_Model):
    run: str
    pod: str
    events: list[Record]


class NodeTimeline(_Model):
    run: str
    node: str
    events: list[Record]


class Step(_Model):
    t: float
    time: str
    what: str
    text: str
    id: str | None = None


class Explanation(_Model):
    """Why a pod ended as it did: the verdict first, then the steps, ranking and grace."""

    run: str
    pod: str
    node: str | None
    verdict: str
    outcome: dict[str, Any] | None = Field(description="the ending decision (type, t, time, id, data); null: none")
    steps: list[Step]
    ranking: list[dict[str, Any]]
    grace: str
    signal: dict[str, Any] | None
    observed: list[dict[str, Any]] = Field(
        default_factory=list,
        description="the recording's own events about the pod (spec.observedEvents: time, type, reason, message, "
        "object, source, count), oldest first; empty when the scenario recorded none",
    )
    unmodelled: list[dict[str, Any]] = Field(
        default_factory=list,
        description="fields of the scenario upstream decides by that ledgerlet does not model, touching this pod",
    )


class Health(_Model):
    status: Literal["ok"]


class Ready(_Model):
    status: Literal["ready"]
