"""OpenTelemetry for the services: traces that follow an event across processes, and
metrics for events in and out, consumer lag and decision latency.

Exporters are chosen by the standard OpenTelemetry variables: ``OTEL_TRACES_EXPORTER``
and ``OTEL_METRICS_EXPORTER`` (``none``, the default, ``console`` or ``otlp``), with
``OTEL_EXPORTER_OTLP_ENDPOINT`` for OTLP over HTTP and ``OTEL_TRACES_SAMPLER_ARG`` for the
fraction of input events traced (default 1). Trace context travels in Kafka record
headers (W3C ``traceparent``), so one input's trace spans the driver, every service
that handled it or what it caused, and the recorder. With both exporters off, the hot
path does no telemetry work at all.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions, Meter, Observation
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from ledgerlet_core.contracts.envelope import Envelope
from ledgerlet_core.contracts.observed import OBSERVED_BATCH, observed_index
from ledgerlet_services.runtime.outgoing import Outgoing
from ledgerlet_services.runtime.process_metrics import observe_process

if TYPE_CHECKING:  # (the SDK is imported only when an exporter is on: 70 ms of every start)
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.metrics.view import View
    from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter

Headers = tuple[tuple[str, bytes], ...]

_PROPAGATOR = TraceContextTextMapPropagator()
EXPORTERS = ("none", "console", "otlp")
#: metrics may also be scraped: OTEL_METRICS_EXPORTER=prometheus serves /metrics on
#: OTEL_EXPORTER_PROMETHEUS_HOST:OTEL_EXPORTER_PROMETHEUS_PORT (the SDK's names; 9464)
METRICS_EXPORTERS = (*EXPORTERS, "prometheus")
#: decision latency, seconds: from consuming a batch to the bus acknowledging what it
#: caused; half a millisecond on the in-memory bus up to tens of seconds on a loaded
#: broker (the SDK's default buckets, 0, 5, 10 ... 10000, are milliseconds' and put every
#: latency in seconds in the first)
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


def views() -> tuple[View, ...]:
    """The metric views: decision latency in :data:`LATENCY_BUCKETS`."""
    from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View

    return (
        View(
            instrument_name="ledgerlet.decision.latency",
            aggregation=ExplicitBucketHistogramAggregation(boundaries=LATENCY_BUCKETS),
        ),
    )


def _carrier(headers: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    return {k: v.decode("latin-1") for k, v in headers if k in ("traceparent", "tracestate")}


def _headers(carrier: dict[str, str]) -> Headers:
    return tuple((k, v.encode("latin-1")) for k, v in carrier.items())


@dataclass
class Telemetry:
    """One process's tracer and instruments (no global OpenTelemetry state is touched)."""

    tracer_provider: TracerProvider | None = None
    meter_provider: MeterProvider | None = None
    _lag: dict[str, int] = field(default_factory=dict)
    _instruments: dict[str, Any] = field(default_factory=dict)
    #: the /metrics server (OTEL_METRICS_EXPORTER=prometheus): (server, thread)
    _scrape: Any = None

    @classmethod
    def disabled(cls) -> Telemetry:
        return cls()

    @classmethod
    def from_env(cls, service: str, env: dict[str, str] | None = None) -> Telemetry:
        env = dict(os.environ if env is None else env)
        traces = env.get("OTEL_TRACES_EXPORTER", "none").strip().lower()
        metrics = env.get("OTEL_METRICS_EXPORTER", "none").strip().lower()
        for var, value, known in (
            ("OTEL_TRACES_EXPORTER", traces, EXPORTERS),
            ("OTEL_METRICS_EXPORTER", metrics, METRICS_EXPORTERS),
        ):
            if value not in known:
                raise ValueError(f"{var}={value!r}: expected one of {', '.join(known)}")
        ratio = float(env.get("OTEL_TRACES_SAMPLER_ARG", "1"))
        if traces == "none" and metrics == "none":
            return cls.disabled()
        span_processor: SpanProcessor | None = None
        if traces != "none":
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

            if traces == "console":
                span_processor = BatchSpanProcessor(ConsoleSpanExporter())
            else:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                span_processor = BatchSpanProcessor(OTLPSpanExporter())
        reader: MetricReader | None = None
        interval = int(env.get("OTEL_METRIC_EXPORT_INTERVAL", "10000"))
        if metrics in ("console", "otlp"):
            from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader

            if metrics == "console":
                reader = PeriodicExportingMetricReader(ConsoleMetricExporter(), export_interval_millis=interval)
            else:
                from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

                reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=interval)
        scrape = None
        if metrics == "prometheus":
            from opentelemetry.exporter.prometheus import PrometheusMetricReader
            from prometheus_client import start_http_server

            reader = PrometheusMetricReader()
            host = env.get("OTEL_EXPORTER_PROMETHEUS_HOST", "localhost")
            port = env.get("OTEL_EXPORTER_PROMETHEUS_PORT", "9464")
            try:
                scrape = start_http_server(int(port), addr=host)
            except (OSError, ValueError) as exc:
                raise ValueError(
                    f"OTEL_EXPORTER_PROMETHEUS_PORT={port!r}: cannot serve /metrics there: {exc}"
                ) from None
        built = cls.build(
            service,
            span_processor=span_processor,
            metric_reader=reader,
            ratio=ratio,
            process_metrics=metrics != "prometheus",
        )
        built._scrape = scrape
        return built

    @classmethod
    def build(
        cls,
        service: str,
        *,
        span_processor: SpanProcessor | None = None,
        span_exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
        ratio: float = 1.0,
        process_metrics: bool = True,
    ) -> Telemetry:
        """``process_metrics``: the process's RSS, CPU time and open descriptors as OTel
        instruments (runtime/process_metrics.py); off for the Prometheus exporter, whose
        registry has prometheus_client's own ``process_*`` already."""
        if span_processor is None and span_exporter is None and metric_reader is None:
            return cls.disabled()
        from opentelemetry.sdk.resources import Resource

        resource = Resource.create({"service.name": f"ledgerlet-{service}", "service.namespace": "ledgerlet"})
        tracer_provider = None
        if span_exporter is not None:
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor

            span_processor = SimpleSpanProcessor(span_exporter)
        if span_processor is not None:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

            tracer_provider = TracerProvider(resource=resource, sampler=ParentBased(TraceIdRatioBased(ratio)))
            tracer_provider.add_span_processor(span_processor)
        meter_provider = None
        if metric_reader is not None:
            from opentelemetry.sdk.metrics import MeterProvider

            meter_provider = MeterProvider(resource=resource, metric_readers=[metric_reader], views=views())
        t = cls(tracer_provider, meter_provider)
        if meter_provider is not None:
            meter = meter_provider.get_meter("ledgerlet")
            t._make_instruments(meter)
            if process_metrics:
                observe_process(meter)
        return t

    def _make_instruments(self, meter: Meter) -> None:
        self._instruments["in"] = meter.create_counter(
            "ledgerlet.events.in", unit="{event}", description="events a service consumed"
        )
        self._instruments["out"] = meter.create_counter(
            "ledgerlet.events.out", unit="{event}", description="events a service published"
        )
        self._instruments["latency"] = meter.create_histogram(
            "ledgerlet.decision.latency",
            unit="s",
            description="from consuming the batch that caused a decision to the bus acknowledging it",
        )
        self._instruments["stored"] = meter.create_counter(
            "ledgerlet.events.stored", unit="{event}", description="events appended to the event store"
        )

        def observe_lag(_options: CallbackOptions) -> list[Observation]:
            return [Observation(v, {"group": g}) for g, v in self._lag.items()]

        meter.create_observable_gauge(
            "ledgerlet.consumer.lag", callbacks=[observe_lag], unit="{event}", description="records not yet committed"
        )

    # -- what the shells call ----------------------------------------------------
    @property
    def tracing(self) -> bool:
        return self.tracer_provider is not None

    @property
    def metering(self) -> bool:
        return self.meter_provider is not None

    @contextlib.contextmanager
    def handling(self, service: str, env: Envelope, headers: Sequence[tuple[str, bytes]]) -> Iterator[Headers]:
        """A span for handling one event, child of the span that sent it; yields the
        headers that carry this span to what the handler emits."""
        if self.tracer_provider is None:
            yield ()
            return
        parent = _PROPAGATOR.extract(_carrier(headers))
        tracer = self.tracer_provider.get_tracer("ledgerlet")
        with tracer.start_as_current_span(
            f"{service} {env.type}", context=parent, kind=SpanKind.CONSUMER, attributes=_attributes(service, env)
        ):
            carrier: dict[str, str] = {}
            _PROPAGATOR.inject(carrier)
            yield _headers(carrier)

    def publishing(self, who: str, env: Envelope) -> Headers:
        """A root span for an event entering the stack (an input, a tick); its headers."""
        if self.tracer_provider is None:
            return ()
        tracer = self.tracer_provider.get_tracer("ledgerlet")
        span = tracer.start_span(f"{who} {env.type}", kind=SpanKind.PRODUCER, attributes=_attributes(who, env))
        ctx = trace.set_span_in_context(span)
        carrier: dict[str, str] = {}
        _PROPAGATOR.inject(carrier, context=ctx)
        span.end()
        return _headers(carrier)

    def stored(self, service: str, envelopes: Sequence[tuple[Envelope, Sequence[tuple[str, bytes]]]]) -> None:
        """The recorder's span per stored event (child of the event's own span)."""
        if self.meter_provider is not None:
            self._instruments["stored"].add(len(envelopes), {"service": service})
        if self.tracer_provider is None:
            return
        tracer = self.tracer_provider.get_tracer("ledgerlet")
        for env, headers in envelopes:
            carrier = _carrier(headers)
            if not carrier:
                continue
            parent = _PROPAGATOR.extract(carrier)
            token = otel_context.attach(parent)
            try:
                tracer.start_span(
                    f"{service} store {env.type}", kind=SpanKind.CONSUMER, attributes=_attributes(service, env)
                ).end()
            finally:
                otel_context.detach(token)

    def events_in(self, service: str, n: int) -> None:
        if self.meter_provider is not None:
            self._instruments["in"].add(n, {"service": service})

    def batch_done(self, service: str, outgoing: Sequence[Outgoing], seconds: float) -> None:
        if self.meter_provider is None or not outgoing:
            return
        self._instruments["out"].add(sum(o.events for o in outgoing), {"service": service})
        latency = self._instruments["latency"]
        for o in outgoing:
            if o.envelope.kind == "decision":
                latency.record(seconds, {"service": service, "type": o.envelope.type})

    def set_lag(self, group: str, lag: int) -> None:
        self._lag[group] = lag

    def lag_reporter(self) -> Callable[[str, int], None] | None:
        return self.set_lag if self.metering else None

    def shutdown(self) -> None:
        if self.tracer_provider is not None:
            self.tracer_provider.shutdown()
        if self.meter_provider is not None:
            self.meter_provider.shutdown()
        if self._scrape is not None:
            server, _ = self._scrape
            server.shutdown()
            server.server_close()
            self._scrape = None


#: a batch's nodes named on its span at most (its count is there too)
SPAN_NODES: Final = 100


def _attributes(service: str, env: Envelope) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        "ledgerlet.service": service,
        "ledgerlet.event.id": env.id,
        "ledgerlet.event.type": env.type,
        "ledgerlet.run": env.run,
        "ledgerlet.t": env.t,
    }
    if env.node:
        attrs["ledgerlet.node"] = env.node
    elif env.type == OBSERVED_BATCH:  # (a batch's nodes are in its data)
        nodes = observed_index(env.data).nodes
        attrs["ledgerlet.observations"] = len(nodes)
        attrs["ledgerlet.nodes"] = nodes[:SPAN_NODES]
        if len(nodes) == 1:
            attrs["ledgerlet.node"] = nodes[0]
    if env.pod:
        attrs["ledgerlet.pod"] = env.pod
    return attrs
