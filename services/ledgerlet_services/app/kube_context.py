"""``ledgerlet kubeconfig``: a kubeconfig whose current context is one run at one instant.

The server is asked which runs it holds (``GET /v1/runs``, with the token), so that the
run given (an id, a prefix of one, nothing for the newest completed run) is pinned to
its full id and the instant checked against the run's length before anything is
written: the context then keeps naming the same run when newer ones are stored. The
cluster's server URL is ``SERVER/k8s/RUN/AT@now`` (``AT`` with ``--clock recorded``);
the token is referred to by its file (``tokenFile``), never copied into the output.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ledgerlet_core.model.duration import SECOND, format_duration
from ledgerlet_core.model.errors import InputError
from ledgerlet_core.model.timefmt import format_rfc3339, parse_rfc3339
from ledgerlet_services.audit.kube_api.clock import NOW_SUFFIX
from ledgerlet_services.audit.kube_api.meta import ApiError, parse_at
from ledgerlet_services.audit.kube_api.mount import PREFIX
from ledgerlet_store.runs import RunState, UnknownRun, pick_run

#: how the kubeconfig's server serves timestamps (kube_api/clock.py)
CLOCKS = ("now", "recorded")


class Unreachable(RuntimeError):
    """The server did not answer (or not as a ledgerlet audit API)."""


def _runs(server: str, token: str | None, timeout: float, tls: ssl.SSLContext | None) -> list[dict[str, Any]]:
    request = urllib.request.Request(f"{server}/v1/runs", headers={"Accept": "application/json"})
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=tls) as answer:
            body = json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        if exc.code == 401:
            raise Unreachable(
                f"{server} wants a bearer token: give the one it was started with (--token-file)"
            ) from None
        raise Unreachable(f"{server}/v1/runs answered {exc.code}: is it a ledgerlet audit API?") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise Unreachable(f"cannot reach the audit API at {server}: {getattr(exc, 'reason', exc)}") from None
    if not isinstance(body, list):
        raise Unreachable(f"{server}/v1/runs did not answer with a list of runs: is it a ledgerlet audit API?")
    return body


def kubeconfig(
    server: str,
    *,
    run: str | None = None,
    at: str = "end",
    clock: str = "now",
    token_file: Path | None = None,
    certificate_authority: Path | None = None,
    timeout: float = 10.0,
) -> str:
    """The kubeconfig (YAML text). :class:`InputError` for a run or instant the server
    does not have, or a token kubectl would not send; :class:`Unreachable` when the
    server cannot be asked."""
    text, _ = kubeconfig_and_note(
        server,
        run=run,
        at=at,
        clock=clock,
        token_file=token_file,
        certificate_authority=certificate_authority,
        timeout=timeout,
    )
    return text


def kubeconfig_and_note(
    server: str,
    *,
    run: str | None = None,
    at: str = "end",
    clock: str = "now",
    token_file: Path | None = None,
    certificate_authority: Path | None = None,
    timeout: float = 10.0,
) -> tuple[str, str]:
    """:func:`kubeconfig`, and a line for the user saying which run, which instant in
    clock time, and how its timestamps are served (``clock``: ``now`` moves them so that
    the instant reads as the moment of each request, ``recorded`` keeps them)."""
    if clock not in CLOCKS:
        raise InputError(f"--clock: {clock!r} is neither now nor recorded")
    server = server.rstrip("/")
    if not server.startswith(("http://", "https://")):
        raise InputError(f"--server {server!r} is not an http:// or https:// URL")
    if token_file is not None and server.startswith("http://"):
        # client-go sets a user's credentials only on TLS connections (clientcmd
        # getUserIdentificationPartialConfig): over http kubectl would send no token at all
        raise InputError(
            "kubectl sends a bearer token only over TLS: serve with --tls-cert-file and --tls-private-key-file "
            "and give --server https://... (with --certificate-authority for a certificate of your own CA)"
        )
    tls = None
    if certificate_authority is not None:
        if not certificate_authority.is_file():
            raise InputError("no such file", file=str(certificate_authority))
        try:
            tls = ssl.create_default_context(cafile=str(certificate_authority))
        except (ssl.SSLError, OSError) as exc:
            raise InputError(f"not a PEM certificate: {exc}", file=str(certificate_authority)) from None
    token = None
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip() or None
        except OSError as exc:
            raise InputError(exc.strerror or str(exc), file=str(token_file)) from None
    listed = _runs(server, token, timeout, tls)
    states = [
        RunState(r["run"], datetime.fromisoformat(r["recordedAt"]).astimezone(UTC), r.get("status", "completed"))
        for r in listed
    ]
    try:
        chosen = pick_run(states, run).run
    except UnknownRun as exc:
        raise InputError(f"--run: {exc}") from None
    entry = next(r for r in listed if r["run"] == chosen)
    duration = round(entry["durationSeconds"] * SECOND)
    start = parse_rfc3339(entry["start"])
    try:
        instant = parse_at(at, start, duration)
    except ApiError as exc:
        raise InputError(f"--at: {exc.message}") from None
    segment = "end" if at == "end" else format_duration(instant)
    name = f"ledgerlet-{chosen[:12]}-{segment}"
    if clock == "now":
        segment += NOW_SUFFIX
    user: dict[str, Any] = {"tokenFile": str(token_file.resolve())} if token_file is not None else {}
    cluster: dict[str, Any] = {"server": f"{server}{PREFIX}/{chosen}/{segment}"}
    if certificate_authority is not None:
        cluster["certificate-authority"] = str(certificate_authority.resolve())
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": cluster}],
        "users": [{"name": name, "user": user}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": "default"}}],
        "current-context": name,
        "preferences": {},
    }
    when = format_rfc3339(start, instant)
    served = (
        f"timestamps moved so that {when} reads as now (kubectl's own ages then count from it; "
        "--clock recorded serves them as recorded)"
        if clock == "now"
        else "timestamps as recorded (kubectl describe's ages then count from them to your clock)"
    )
    note = f"run {chosen} ({entry.get('name', '')}) at {format_duration(instant)}, {when}; {served}"
    return yaml.safe_dump(config, sort_keys=False, default_flow_style=False), note
