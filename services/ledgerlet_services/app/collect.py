"""``ledgerlet collect``: records a live cluster into files ``ledgerlet import`` reads.

Once: every object kind a scenario models (as the API server lists them) and one
kubelet's ``/configz``. Then, every ``interval`` for ``rounds`` rounds: each node's
``/stats/summary`` through the API server's node proxy (what
``kubectl get --raw /api/v1/nodes/N/proxy/stats/summary`` prints).

The layout of the output directory::

    objects/nodes.json, objects/pods.json, ...   the lists, as the API server answers
    configz.json                                 the first node's kubelet configuration
    summaries/NODE/00000.json, 00001.json, ...   one summary per node and round
"""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgerlet_services.app.kubeconfig import ApiServer

#: the lists a scenario models (scenario/recording.py KINDS), by API path
RESOURCES: tuple[tuple[str, str], ...] = (
    ("nodes", "/api/v1/nodes"),
    ("priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ("runtimeclasses", "/apis/node.k8s.io/v1/runtimeclasses"),
    ("poddisruptionbudgets", "/apis/policy/v1/poddisruptionbudgets"),
    ("resourcequotas", "/api/v1/resourcequotas"),
    ("persistentvolumes", "/api/v1/persistentvolumes"),
    ("persistentvolumeclaims", "/api/v1/persistentvolumeclaims"),
    ("replicasets", "/apis/apps/v1/replicasets"),
    ("deployments", "/apis/apps/v1/deployments"),
    ("statefulsets", "/apis/apps/v1/statefulsets"),
    ("daemonsets", "/apis/apps/v1/daemonsets"),
    ("jobs", "/apis/batch/v1/jobs"),
    ("pods", "/api/v1/pods"),
)
#: without these there is nothing to import
REQUIRED = ("nodes", "pods")
#: seconds one request may take
REQUEST_TIMEOUT = 30.0


class ApiError(RuntimeError):
    """The API server answered with an error, or could not be reached."""

    def __init__(self, path: str, status: int | None, message: str) -> None:
        super().__init__(f"GET {path}: {f'HTTP {status}: ' if status else ''}{message}")
        self.path = path
        self.status = status


class Client:
    """GETs JSON from one API server through the Kubernetes client's connection pool (its
    TLS: the cluster's CA, a client certificate from files or a plugin) and credentials
    (a token from an exec plugin renewed when it expires). No write: collect and record
    only read (``record`` watches too, :meth:`watch`); a redirect is an error (the token
    would follow it)."""

    def __init__(self, api: ApiServer, timeout: float = REQUEST_TIMEOUT) -> None:
        from kubernetes.client.rest import RESTClientObject

        self.api = api
        self.timeout = timeout
        self._pool = RESTClientObject(api.configuration).pool_manager

    def _auth(self) -> dict[str, str]:
        cfg = self.api.configuration
        token = cfg.get_api_key_with_prefix("BearerToken", alias="authorization")  # (refreshes an expired one)
        if token:
            return {"Authorization": str(token)}
        return {}

    def get(self, path: str) -> Any:
        from urllib3.exceptions import HTTPError

        try:
            headers = {"Accept": "application/json", **self._auth()}
            answer = self._pool.request(
                "GET", self.api.server + path, headers=headers, timeout=self.timeout, redirect=False, retries=False
            )
        except (HTTPError, OSError) as exc:
            raise ApiError(path, None, str(getattr(exc, "reason", None) or exc)) from None
        if 300 <= answer.status < 400:
            where = answer.headers.get("Location", "elsewhere")
            raise ApiError(path, answer.status, f"redirected to {where}: not followed")
        if not 200 <= answer.status < 300:
            raise ApiError(path, answer.status, _reason(answer.data, answer.reason))
        try:
            return json.loads(answer.data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise ApiError(path, None, f"not JSON: {exc}") from None

    def watch(self, path: str, read_timeout: float) -> Iterator[Any]:
        """The events of a watch (``?watch=1``: one JSON document per line, as the API
        server streams them) until the server ends it; :class:`ApiError` when it cannot be
        opened, is cut off, or is silent for ``read_timeout`` seconds."""
        from urllib3 import Timeout
        from urllib3.exceptions import HTTPError

        try:
            headers = {"Accept": "application/json", **self._auth()}
            answer = self._pool.request(
                "GET",
                self.api.server + path,
                headers=headers,
                timeout=Timeout(connect=self.timeout, read=read_timeout),
                redirect=False,
                retries=False,
                preload_content=False,
            )
        except (HTTPError, OSError) as exc:
            raise ApiError(path, None, str(getattr(exc, "reason", None) or exc)) from None
        try:
            if not 200 <= answer.status < 300:
                raise ApiError(path, answer.status, _reason(answer.read(), answer.reason))
            pending = b""
            try:
                for chunk in answer.stream(amt=None, decode_content=True):
                    pending += chunk
                    *lines, pending = pending.split(b"\n")
                    for line in lines:
                        if line.strip():
                            yield json.loads(line)
            except (HTTPError, OSError) as exc:
                raise ApiError(path, None, f"watch cut off: {getattr(exc, 'reason', None) or exc}") from None
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise ApiError(path, None, f"not JSON: {exc}") from None
        finally:  # (a watch left half-read is not a connection to use again)
            answer.close()
            answer.release_conn()


def _reason(body: bytes, reason: str | None) -> str:
    """The API server's Status message when it sent one."""
    try:
        status = json.loads(body)
        return str(status.get("message") or reason)
    except (ValueError, TypeError, AttributeError):
        return str(reason)


@dataclass
class Collected:
    out: Path
    objects: dict[str, int] = field(default_factory=dict)
    summaries: int = 0
    rounds: int = 0
    nodes: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        kinds = ", ".join(f"{n} {k}" for k, n in self.objects.items() if n)
        lines = [
            f"{self.out}: {kinds}; {self.summaries} summaries over {self.rounds} rounds of {len(self.nodes)} nodes",
            *(f"note: {n}" for n in self.notes),
            f"import it: ledgerlet import {self.out} --out scenario.yaml",
        ]
        return "\n".join(lines)


def _write(path: Path, doc: Any) -> None:
    """Whole or not at all: a file ``import`` reads is never half-written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    tmp.replace(path)


Progress = Callable[[int, int], None]


def collect(
    client: Client,
    out: Path,
    *,
    interval: float,
    rounds: int,
    progress: Progress | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Collected:
    """Record the cluster into ``out`` (a new or empty directory: files of an earlier
    collect would be imported with these); ``progress(done, total)`` after each summary."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ApiError("--out", None, f"{out} is not an empty directory; collect into a new one")
    result = Collected(out=out)
    for plural, path in RESOURCES:
        try:
            listed = client.get(path)
        except ApiError as exc:
            if plural in REQUIRED:
                raise
            result.notes.append(f"{plural} not recorded ({exc})")
            continue
        items = (listed.get("items") or []) if isinstance(listed, dict) else []
        result.objects[plural] = len(items)
        _write(out / "objects" / f"{plural}.json", listed)
    result.nodes = [n["metadata"]["name"] for n in _items(out / "objects" / "nodes.json")]
    _configz(client, result)
    total = rounds * len(result.nodes)
    missed: dict[str, int] = {}
    for r in range(rounds):
        began = clock()
        for i, node in enumerate(result.nodes):
            try:
                summary = client.get(f"/api/v1/nodes/{urllib.parse.quote(node, safe='')}/proxy/stats/summary")
            except ApiError:
                missed[node] = missed.get(node, 0) + 1  # a node down or unreachable: its gap is data too
            else:
                _write(out / "summaries" / node / f"{r:05d}.json", summary)
                result.summaries += 1
            if progress is not None:
                progress(r * len(result.nodes) + i + 1, total)
        result.rounds += 1
        if r + 1 < rounds:
            sleep(max(0.0, interval - (clock() - began)))
    if missed:
        result.notes.append("summaries not answered: " + ", ".join(f"{n} x{k}" for n, k in sorted(missed.items())))
    return result


def _items(path: Path) -> list[dict[str, Any]]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    return [i for i in doc.get("items") or [] if isinstance(i, dict)]


def _configz(client: Client, result: Collected) -> None:
    """The first answering kubelet's configuration; the nodes whose differs are named
    (a scenario's ``kubeletConfig`` is one for all nodes)."""
    configs: dict[str, Any] = {}
    for node in result.nodes:
        try:
            configs[node] = client.get(f"/api/v1/nodes/{urllib.parse.quote(node, safe='')}/proxy/configz")
        except ApiError as exc:
            if not configs:
                result.notes.append(f"no kubelet configuration from {node} ({exc})")
    if not configs:
        return
    first, config = next(iter(configs.items()))
    _write(result.out / "configz.json", config)
    differ = [n for n, c in configs.items() if c != config]
    if differ:
        result.notes.append(f"kubelet configuration of {', '.join(differ)} differs from {first}'s, which was recorded")
