"""A minimal OTLP/HTTP receiver for tests: services export spans and metrics to it
exactly as they would to an OpenTelemetry collector. The decoding is shared with the
collector and Jaeger stand-ins of the compose test (deploy/compose-test/standins/otel),
which copy this file into their image: it must import nothing but the OTLP protobufs."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str
    name: str
    service: str
    attributes: dict[str, Any]
    start_ns: int = 0
    end_ns: int = 0


def decode_spans(request: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    """Every span of an OTLP export, with the service.name of its resource."""
    got = []
    for rs in request.resource_spans:
        service = attributes(rs.resource.attributes).get("service.name", "")
        for ss in rs.scope_spans:
            for s in ss.spans:
                got.append(
                    ReceivedSpan(
                        s.trace_id.hex(),
                        s.span_id.hex(),
                        s.parent_span_id.hex(),
                        s.name,
                        service,
                        attributes(s.attributes),
                        s.start_time_unix_nano,
                        s.end_time_unix_nano,
                    )
                )
    return got


def decode_metric_names(request: ExportMetricsServiceRequest) -> list[tuple[str, str]]:
    """(metric name, service.name) of every metric in an OTLP export."""
    return [
        (m.name, attributes(rm.resource.attributes).get("service.name", ""))
        for rm in request.resource_metrics
        for sm in rm.scope_metrics
        for m in sm.metrics
    ]


def chain_to_root(span: ReceivedSpan, spans: Iterable[ReceivedSpan]) -> list[ReceivedSpan]:
    """The span and its ancestors among ``spans``, root first."""
    by_id = {s.span_id: s for s in spans}
    chain = [span]
    while chain[-1].parent_id and chain[-1].parent_id in by_id:
        chain.append(by_id[chain[-1].parent_id])
    return chain[::-1]


@dataclass
class OtlpReceiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    metrics: dict[str, set[str]] = field(default_factory=dict)  # metric name -> services
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> OtlpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/traces":
                    receiver._traces(body)
                elif self.path == "/v1/metrics":
                    receiver._metrics(body)
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        got = decode_spans(request)
        with self._lock:
            self.spans.extend(got)

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            for name, service in decode_metric_names(request):
                self.metrics.setdefault(name, set()).add(service)


def attributes(kvs: Any) -> dict[str, Any]:
    """OTLP key-values as a dict (strings and integers; other kinds as None)."""
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        out[kv.key] = v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value") else None
    return out
