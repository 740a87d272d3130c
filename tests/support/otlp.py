"""A minimal OTLP/HTTP receiver for tests: services export spans and metrics to it
exactly as they would to an OpenTelemetry collector."""

from __future__ import annotations

import threading
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
        got = []
        for rs in request.resource_spans:
            service = _attrs(rs.resource.attributes).get("service.name", "")
            for ss in rs.scope_spans:
                for s in ss.spans:
                    got.append(
                        ReceivedSpan(
                            s.trace_id.hex(),
                            s.span_id.hex(),
                            s.parent_span_id.hex(),
                            s.name,
                            service,
                            _attrs(s.attributes),
                        )
                    )
        with self._lock:
            self.spans.extend(got)

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        with self._lock:
            for rm in request.resource_metrics:
                service = _attrs(rm.resource.attributes).get("service.name", "")
                for sm in rm.scope_metrics:
                    for m in sm.metrics:
                        self.metrics.setdefault(m.name, set()).add(service)


def _attrs(kvs: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in kvs:
        v = kv.value
        out[kv.key] = v.string_value if v.HasField("string_value") else v.int_value if v.HasField("int_value") else None
    return out
