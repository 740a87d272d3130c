"""Stand-ins for the OpenTelemetry collector and Jaeger's all-in-one image, for the compose
test on machines that reach no container registry. They do, for what ledgerlet sends,
what the real ones do, so that "a trace reaches Jaeger" is checked through the same hops:

* ``collector --config=FILE``: reads the collector configuration compose mounts
  (deploy/otel-collector.yaml), receives OTLP over HTTP and gRPC where its ``otlp``
  receiver says, and hands each pipeline's data to its exporters: ``otlp/*`` forwards
  over gRPC (to Jaeger), ``prometheus`` serves what it received at ``/metrics``, ``debug``
  logs a line per batch; the ``health_check`` extension answers on its endpoint.
* ``jaeger``: receives OTLP (gRPC 4317, HTTP 4318), keeps the newest traces in memory and
  answers the query API the UI uses (16686: ``/api/services``, ``/api/traces``,
  ``/api/traces/ID``) in Jaeger's JSON; its admin port (14269) answers health checks.

The role comes from OTEL_STANDIN_ROLE (set by the image) or the first argument.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import grpc
import yaml
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as metrics_pb
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as metrics_grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2 as trace_pb
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc as trace_grpc
from otlp import ReceivedSpan, attributes, decode_spans  # tests/support/otlp.py, copied beside this file

Traces = trace_pb.ExportTraceServiceRequest
Metrics = metrics_pb.ExportMetricsServiceRequest
#: (method, path) -> handler of the query string, answering (status, content type, body)
Routes = dict[tuple[str, str], Callable[[str, bytes], tuple[int, str, bytes]]]


def _health() -> Callable[[str, bytes], tuple[int, str, bytes]]:
    """A health check's answer, as the collector's extension and Jaeger's admin port give it."""
    body = json.dumps({"status": "Server available", "upSince": time.strftime("%Y-%m-%dT%H:%M:%SZ")}).encode()
    return lambda _query, _body: (200, "application/json", body)


def log(message: str) -> None:
    print(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {message}", flush=True)


def host_port(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host or "0.0.0.0", int(port)


def serve_http(endpoint: str, routes: Routes, prefixes: Routes | None = None) -> ThreadingHTTPServer:
    """An HTTP server on ``endpoint`` answering ``routes`` (exact paths) and ``prefixes``."""

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, method: str) -> None:
            url = urlparse(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            handler = routes.get((method, url.path))
            arg = url.query
            for (m, prefix), h in (prefixes or {}).items():
                if handler is None and m == method and url.path.startswith(prefix):
                    handler, arg = h, url.path.removeprefix(prefix)
            status, kind, out = handler(arg, body) if handler else (404, "text/plain", b"404 page not found\n")
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self) -> None:
            self._answer("GET")

        def do_POST(self) -> None:
            self._answer("POST")

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(host_port(endpoint), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serve_otlp(
    http: str | None,
    grpc_endpoint: str | None,
    on_traces: Callable[[Traces], None],
    on_metrics: Callable[[Metrics], None],
) -> list[Any]:
    """OTLP receivers: over HTTP (protobuf bodies) and over gRPC, as configured."""
    servers: list[Any] = []

    def http_export(kind: type[Traces] | type[Metrics], sink: Callable[[Any], None]) -> Any:
        def handle(_query: str, body: bytes) -> tuple[int, str, bytes]:
            request = kind()
            request.ParseFromString(body)
            sink(request)
            return 200, "application/x-protobuf", b""

        return handle

    if http:
        routes: Routes = {
            ("POST", "/v1/traces"): http_export(Traces, on_traces),
            ("POST", "/v1/metrics"): http_export(Metrics, on_metrics),
        }
        servers.append(serve_http(http, routes))
        log(f"OTLP/HTTP receiver on {http}")
    if grpc_endpoint:

        class TraceService(trace_grpc.TraceServiceServicer):
            def Export(self, request: Traces, context: Any) -> trace_pb.ExportTraceServiceResponse:
                on_traces(request)
                return trace_pb.ExportTraceServiceResponse()

        class MetricsService(metrics_grpc.MetricsServiceServicer):
            def Export(self, request: Metrics, context: Any) -> metrics_pb.ExportMetricsServiceResponse:
                on_metrics(request)
                return metrics_pb.ExportMetricsServiceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        trace_grpc.add_TraceServiceServicer_to_server(TraceService(), server)
        metrics_grpc.add_MetricsServiceServicer_to_server(MetricsService(), server)
        server.add_insecure_port("{}:{}".format(*host_port(grpc_endpoint)))
        server.start()
        servers.append(server)
        log(f"OTLP/gRPC receiver on {grpc_endpoint}")
    return servers


# --- the collector ----------------------------------------------------------------------


class OtlpForward:
    """The ``otlp`` exporter: OTLP over gRPC to ``endpoint``, from a queue, retrying a batch
    for up to a minute while the other end is not there yet (as the collector's retry does)."""

    def __init__(self, name: str, endpoint: str) -> None:
        self.name = name
        channel = grpc.insecure_channel(endpoint)
        self.traces = trace_grpc.TraceServiceStub(channel)
        self.metrics = metrics_grpc.MetricsServiceStub(channel)
        self.queue: queue.Queue[Traces | Metrics] = queue.Queue(maxsize=1000)
        threading.Thread(target=self._send_all, daemon=True).start()

    def export(self, request: Traces | Metrics) -> None:
        try:
            self.queue.put_nowait(request)
        except queue.Full:
            log(f"{self.name}: queue full, batch dropped")

    def _send_all(self) -> None:
        while True:
            request = self.queue.get()
            stub: Any = self.traces if isinstance(request, Traces) else self.metrics
            deadline = time.monotonic() + 60
            while True:
                try:
                    stub.Export(request, timeout=10)
                    break
                except grpc.RpcError as exc:
                    if time.monotonic() > deadline:
                        log(f"{self.name}: batch dropped after a minute of failures: {exc.code()}")
                        break
                    time.sleep(1)


class PrometheusExporter:
    """The ``prometheus`` exporter: the latest value of every received series at /metrics."""

    def __init__(self, endpoint: str, namespace: str) -> None:
        self.namespace = namespace
        self.series: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[str, float]] = {}
        self.lock = threading.Lock()
        serve_http(endpoint, {("GET", "/metrics"): self._render})
        log(f"Prometheus exporter on {endpoint}")

    def _name(self, name: str) -> str:
        return re.sub(r"[^a-zA-Z0-9_]", "_", f"{self.namespace}_{name}" if self.namespace else name)

    def export(self, request: Metrics) -> None:
        for rm in request.resource_metrics:
            job = str(attributes(rm.resource.attributes).get("service.name", ""))
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    name = self._name(m.name)
                    kind = m.WhichOneof("data")
                    if kind == "sum":
                        counter = m.sum.is_monotonic
                        self._set(name + ("_total" if counter else ""), "counter" if counter else "gauge", job, m.sum)
                    elif kind == "gauge":
                        self._set(name, "gauge", job, m.gauge)
                    elif kind == "histogram":
                        for p in m.histogram.data_points:
                            self._put(f"{name}_count", "counter", job, p.attributes, float(p.count))
                            self._put(f"{name}_sum", "counter", job, p.attributes, p.sum)

    def _set(self, name: str, kind: str, job: str, data: Any) -> None:
        for p in data.data_points:
            value = p.as_double if p.WhichOneof("value") == "as_double" else float(p.as_int)
            self._put(name, kind, job, p.attributes, value)

    def _put(self, name: str, kind: str, job: str, attrs: Any, value: float) -> None:
        labels = tuple(sorted({"job": job, **{k: str(v) for k, v in attributes(attrs).items()}}.items()))
        with self.lock:
            self.series[(name, labels)] = (kind, value)

    def _render(self, _query: str, _body: bytes) -> tuple[int, str, bytes]:
        lines, typed = [], set()
        with self.lock:
            for (name, labels), (kind, value) in sorted(self.series.items()):
                if name not in typed:
                    typed.add(name)
                    lines.append(f"# TYPE {name} {kind}")
                label_text = ",".join(f'{k}="{v}"' for k, v in labels)
                lines.append(f"{name}{{{label_text}}} {value}")
        return 200, "text/plain; version=0.0.4", ("\n".join(lines) + "\n").encode()


class DebugExporter:
    """The ``debug`` exporter at basic verbosity: one line per batch."""

    def export(self, request: Traces | Metrics) -> None:
        if isinstance(request, Traces):
            spans = sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
            log(f"debug: Traces resource spans={len(request.resource_spans)} spans={spans}")
        else:
            count = sum(len(sm.metrics) for rm in request.resource_metrics for sm in rm.scope_metrics)
            log(f"debug: Metrics resource metrics={len(request.resource_metrics)} metrics={count}")


def collector(argv: list[str]) -> list[Any]:
    paths = [a.split("=", 1)[1] for a in argv if a.startswith("--config=")]
    if len(paths) != 1:
        sys.exit("usage: otelcol-contrib --config=FILE (the stand-in reads exactly one file)")
    with open(paths[0]) as f:
        config = yaml.safe_load(f)
    exporters: dict[str, Any] = {}
    for name, conf in (config.get("exporters") or {}).items():
        kind = name.split("/")[0]
        if kind == "otlp":
            if not (conf.get("tls") or {}).get("insecure"):
                sys.exit(f"exporter {name}: the stand-in forwards without TLS only (tls.insecure: true)")
            exporters[name] = OtlpForward(name, conf["endpoint"])
        elif kind == "prometheus":
            exporters[name] = PrometheusExporter(conf["endpoint"], conf.get("namespace", ""))
        elif kind == "debug":
            exporters[name] = DebugExporter()
        else:
            sys.exit(f"exporter {name}: the stand-in knows otlp, prometheus and debug")
    pipelines = config["service"]["pipelines"]

    def to(signal_name: str) -> Callable[[Any], None]:
        targets = [exporters[e] for e in (pipelines.get(signal_name) or {}).get("exporters", [])]

        def export(request: Any) -> None:
            for target in targets:
                target.export(request)

        return export

    protocols = config["receivers"]["otlp"]["protocols"]
    servers = serve_otlp(
        (protocols.get("http") or {}).get("endpoint"),
        (protocols.get("grpc") or {}).get("endpoint"),
        to("traces"),
        to("metrics"),
    )
    health = (config.get("extensions") or {}).get("health_check")
    if health and "health_check" in config["service"].get("extensions", []):
        servers.append(serve_http(health["endpoint"], {("GET", "/"): _health()}))
    log("Everything is ready. Begin running and processing data.")
    return servers


# --- Jaeger -----------------------------------------------------------------------------


class TraceStore:
    """The newest traces, in memory, as Jaeger's memory storage keeps them."""

    def __init__(self, max_traces: int = 20_000) -> None:
        self.traces: collections.OrderedDict[str, list[ReceivedSpan]] = collections.OrderedDict()
        self.max_traces = max_traces
        self.lock = threading.Lock()

    def add(self, request: Traces) -> None:
        with self.lock:
            for span in decode_spans(request):
                self.traces.setdefault(span.trace_id, []).append(span)
                self.traces.move_to_end(span.trace_id)
            while len(self.traces) > self.max_traces:
                self.traces.popitem(last=False)

    def services(self, _query: str, _body: bytes) -> tuple[int, str, bytes]:
        with self.lock:
            names = sorted({s.service for spans in self.traces.values() for s in spans})
        return _json({"data": names, "total": len(names), "limit": 0, "offset": 0, "errors": None})

    def search(self, query: str, _body: bytes) -> tuple[int, str, bytes]:
        q = parse_qs(query)
        service = q.get("service", [""])[0]
        if not service:
            return _json({"data": None, "errors": [{"code": 400, "msg": "parameter 'service' is required"}]}, 400)
        operation = q.get("operation", [""])[0]
        limit = int(q.get("limit", ["20"])[0])
        with self.lock:
            found = [
                list(spans)
                for spans in reversed(self.traces.values())
                if any(s.service == service and (not operation or s.name == operation) for s in spans)
            ][:limit]
        return _json({"data": [_jaeger_trace(t) for t in found], "total": 0, "limit": 0, "offset": 0, "errors": None})

    def trace(self, trace_id: str, _body: bytes) -> tuple[int, str, bytes]:
        with self.lock:
            spans = list(self.traces.get(trace_id.lower().rjust(32, "0"), []))
        if not spans:
            return _json({"data": None, "errors": [{"code": 404, "msg": "trace not found"}]}, 404)
        return _json({"data": [_jaeger_trace(spans)], "total": 0, "limit": 0, "offset": 0, "errors": None})


def _json(value: object, status: int = 200) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(value).encode()


def _jaeger_trace(spans: list[ReceivedSpan]) -> dict[str, Any]:
    """One trace in the JSON of Jaeger's query API (/api/traces)."""
    processes = {service: f"p{i + 1}" for i, service in enumerate(sorted({s.service for s in spans}))}
    return {
        "traceID": spans[0].trace_id,
        "spans": [
            {
                "traceID": s.trace_id,
                "spanID": s.span_id,
                "operationName": s.name,
                "references": (
                    [{"refType": "CHILD_OF", "traceID": s.trace_id, "spanID": s.parent_id}] if s.parent_id else []
                ),
                "startTime": s.start_ns // 1000,
                "duration": max(0, s.end_ns - s.start_ns) // 1000,
                "tags": [
                    {"key": k, "type": "int64" if isinstance(v, int) else "string", "value": v}
                    for k, v in s.attributes.items()
                ],
                "logs": [],
                "processID": processes[s.service],
                "warnings": None,
            }
            for s in spans
        ],
        "processes": {pid: {"serviceName": service, "tags": []} for service, pid in processes.items()},
        "warnings": None,
    }


def jaeger(_argv: list[str]) -> list[Any]:
    store = TraceStore()
    servers: list[Any] = []
    if os.environ.get("COLLECTOR_OTLP_ENABLED", "true").lower() == "true":
        servers += serve_otlp("0.0.0.0:4318", "0.0.0.0:4317", store.add, lambda request: None)
    routes: Routes = {("GET", "/api/services"): store.services, ("GET", "/api/traces"): store.search}
    servers.append(serve_http("0.0.0.0:16686", routes, {("GET", "/api/traces/"): store.trace}))
    log("Query server (HTTP) on 0.0.0.0:16686")
    servers.append(serve_http("0.0.0.0:14269", {("GET", "/"): _health()}))
    return servers


def main(argv: list[str]) -> int:
    role = os.environ.get("OTEL_STANDIN_ROLE") or (argv.pop(0) if argv else "")
    roles = {"collector": collector, "jaeger": jaeger}
    if role not in roles:
        sys.exit(f"role must be one of {sorted(roles)} (OTEL_STANDIN_ROLE or the first argument)")
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    servers = roles[role](argv)
    while not stop.wait(1):
        pass
    for server in servers:
        if isinstance(server, grpc.Server):
            server.stop(1)
        else:
            server.shutdown()
    log("stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
