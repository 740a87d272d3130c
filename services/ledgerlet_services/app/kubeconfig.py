"""How to reach a cluster's API server, from a kubeconfig as kubectl reads it: the
current (or named) context's cluster and user, with TLS and credentials.

Supported credentials: a bearer token (``token``, ``tokenFile``), a client certificate
(``client-certificate[-data]`` with ``client-key[-data]``) and basic auth. ``exec`` and
``auth-provider`` plugins run programs of their own and are refused with a way round.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ledgerlet_core.model.errors import InputError


@dataclass(frozen=True)
class ApiServer:
    """One API server and how to talk to it."""

    server: str
    headers: dict[str, str] = field(default_factory=dict)
    tls: ssl.SSLContext | None = None


def default_path() -> Path:
    """``$KUBECONFIG`` (its first file) or ``~/.kube/config``, as kubectl looks."""
    env = os.environ.get("KUBECONFIG", "")
    first = next((p for p in env.split(os.pathsep) if p), None)
    return Path(first) if first else Path.home() / ".kube" / "config"


def _named(entries: Any, kind: str, name: str, source: str) -> dict[str, Any]:
    for i, entry in enumerate(entries or []):
        if isinstance(entry, dict) and entry.get("name") == name:
            body = entry.get(kind)
            if not isinstance(body, dict):
                raise InputError("expected a mapping", file=source, obj=f"{kind}s[{i}] {name}", field=kind)
            return body
    raise InputError(f"no {kind} named {name!r}", file=source, field=f"{kind}s")


def _bytes(section: Mapping[str, Any], key: str, base: Path, source: str, obj: str) -> bytes | None:
    """``KEY-data`` (base64) or the file ``KEY`` names (relative to the kubeconfig)."""
    data = section.get(f"{key}-data")
    if data:
        try:  # (Go's decoder skips line breaks, and kubeconfigs written by hand have them)
            return base64.b64decode("".join(str(data).split()), validate=True)
        except ValueError:
            raise InputError("not base64", file=source, obj=obj, field=f"{key}-data") from None
    path = section.get(key)
    if path:
        try:
            return (base / str(path)).read_bytes()
        except OSError as exc:
            raise InputError(exc.strerror or str(exc), file=source, obj=obj, field=key) from None
    return None


def _tls(
    cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path, source: str, names: tuple[str, str]
) -> ssl.SSLContext:
    cluster_obj, user_obj = f"cluster {names[0]}", f"user {names[1]}"
    insecure = bool(cluster.get("insecure-skip-tls-verify"))
    ca = None if insecure else _bytes(cluster, "certificate-authority", base, source, cluster_obj)
    # With the cluster's CA given, it alone is trusted (as kubectl does), not every public CA too.
    ctx = ssl.create_default_context() if ca is None else ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif ca is not None:
        try:
            ctx.load_verify_locations(cadata=ca.decode("ascii"))
        except (ssl.SSLError, UnicodeDecodeError, ValueError):
            given = (
                "certificate-authority-data" if cluster.get("certificate-authority-data") else "certificate-authority"
            )
            raise InputError("not a PEM certificate", file=source, obj=cluster_obj, field=given) from None
    cert = _bytes(user, "client-certificate", base, source, user_obj)
    key = _bytes(user, "client-key", base, source, user_obj)
    if (cert is None) != (key is None):
        raise InputError("a client certificate needs its key and the key its certificate", file=source, obj=user_obj)
    if cert is not None and key is not None:
        # ssl loads a chain from files only: a private directory, gone once loaded
        with tempfile.TemporaryDirectory(prefix="ledgerlet-kubeconfig-") as tmp:
            cert_path, key_path = Path(tmp) / "cert.pem", Path(tmp) / "key.pem"
            for path, content in ((cert_path, cert), (key_path, key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(content)
            try:
                ctx.load_cert_chain(cert_path, key_path)
            except ssl.SSLError as exc:
                raise InputError(
                    f"client certificate or key not usable: {exc.reason}", file=source, obj=user_obj
                ) from None
    return ctx


def load_kubeconfig(path: Path | None = None, context: str | None = None, *, token: str | None = None) -> ApiServer:
    """The API server of ``context`` (default: the current context) in ``path``; with
    ``token``, that bearer token instead of the user's own credentials."""
    path = path or default_path()
    source = str(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=source) from None
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {exc}", file=source) from None
    if not isinstance(doc, dict):
        raise InputError("expected a kubeconfig (kind: Config)", file=source)
    name = context or doc.get("current-context")
    if not name:
        raise InputError("no current-context; give --context", file=source, field="current-context")
    ctx = _named(doc.get("contexts"), "context", name, source)
    cluster_name, user_name = ctx.get("cluster", ""), ctx.get("user", "")
    cluster = _named(doc.get("clusters"), "cluster", cluster_name, source)
    user = _named(doc.get("users"), "user", user_name, source) if user_name and not token else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server.startswith(("https://", "http://")):
        raise InputError("expected an http(s):// URL", file=source, obj=f"cluster {cluster_name}", field="server")
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise InputError(
                f"{plugin} credential plugins are not run by ledgerlet; give a token instead "
                '(e.g. --token "$(kubectl create token SERVICEACCOUNT)")',
                file=source,
                obj=f"user {user_name}",
                field=plugin,
            )
    headers: dict[str, str] = {}
    token = token or user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = (path.parent / user["tokenFile"]).read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise InputError(
                exc.strerror or str(exc), file=source, obj=f"user {user_name}", field="tokenFile"
            ) from None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif user.get("username"):
        basic = base64.b64encode(f"{user['username']}:{user.get('password', '')}".encode()).decode()
        headers["Authorization"] = f"Basic {basic}"
    tls = _tls(cluster, user, path.parent, source, (cluster_name, user_name)) if server.startswith("https://") else None
    return ApiServer(server=server.rstrip("/"), headers=headers, tls=tls)
