"""How to reach a cluster's API server, from kubeconfigs as kubectl reads them, through the
official Kubernetes Python client (``kubernetes`` on PyPI, kubernetes-client/python).

What kubectl does and the client does the same way: ``KUBECONFIG`` as a list of files
(``a:b``) merged, the first file to name a cluster, context or user winning (and the
first ``current-context`` set being the one, as client-go has it, read here: the Python
client lets the last win); paths inside each file relative to that file;
bearer tokens (``token``, ``tokenFile``), client certificates (files or ``-data``),
basic auth, the cluster's CA or ``insecure-skip-tls-verify``, ``tls-server-name`` and
``proxy-url``; and ``exec`` credential plugins (every EKS, GKE and AKS kubeconfig): the
program is run with ``KUBERNETES_EXEC_INFO`` and its ``ExecCredential`` gives a token or
a client certificate, run again when the token's ``expirationTimestamp`` passes.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ledgerlet_core.model.errors import InputError

#: ledgerlet's note on each exec failure, beside the client's own message
_LOGGER = "root"


@dataclass(frozen=True)
class ApiServer:
    """One API server and the client configuration that reaches it."""

    server: str
    #: a ``kubernetes.client.Configuration`` (typed loosely: the client ships no types)
    configuration: Any = None
    #: the kubeconfig files read, for messages
    sources: tuple[str, ...] = field(default_factory=tuple)


def default_paths() -> str:
    """``$KUBECONFIG`` (a list, as kubectl takes it) or ``~/.kube/config``."""
    env = os.environ.get("KUBECONFIG", "")
    return env if any(p for p in env.split(os.pathsep)) else str(Path.home() / ".kube" / "config")


class _Captured(logging.Handler):
    """The client logs an exec plugin's failure instead of raising it: kept to say why."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def load_kubeconfig(
    path: Path | str | None = None, context: str | None = None, *, token: str | None = None
) -> ApiServer:
    """The API server of ``context`` (default: the current context) in ``path`` (a file or
    a ``:``-separated list; default ``$KUBECONFIG`` or ``~/.kube/config``); with ``token``,
    that bearer token instead of the user's own credentials (no plugin is run)."""
    from kubernetes import client as k8s_client
    from kubernetes.config.config_exception import ConfigException
    from kubernetes.config.kube_config import KubeConfigLoader, KubeConfigMerger

    paths = str(path) if path is not None else default_paths()
    files = tuple(p for p in paths.split(os.pathsep) if p)
    source = os.pathsep.join(files)
    missing = [p for p in files if not Path(p).expanduser().is_file()]
    if len(missing) == len(files):
        raise InputError("no such file", file=source)
    try:
        merged = KubeConfigMerger(paths).config
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), file=source) from None
    except Exception as exc:  # (YAML errors, an empty file: the client's own words)
        raise InputError(f"not a kubeconfig: {exc}", file=source) from None
    if merged is None or not isinstance(merged.value, dict):
        raise InputError("expected a kubeconfig (kind: Config)", file=source)
    name = context or _first_current_context(files)
    if not name:
        raise InputError("no current-context; give --context", file=source, field="current-context")
    if token:
        _token_instead(merged, name, token, source)
    configuration = k8s_client.Configuration()
    captured = _Captured()
    logging.getLogger(_LOGGER).addHandler(captured)
    try:
        # (config_base_path=None: each file's relative paths from that file, as kubectl reads them)
        loader = KubeConfigLoader(config_dict=merged, active_context=name, config_base_path=None)
        cluster = loader._cluster  # (the client's own view of the context's cluster)
        server = cluster.safe_get("server") if cluster is not None else None
        if not isinstance(server, str) or not server.startswith(("https://", "http://")):
            raise InputError(
                "expected an http(s):// URL", file=source, obj=f"context {name}: its cluster", field="server"
            )
        loader.load_and_set(configuration)
    except ConfigException as exc:
        raise InputError(str(exc), file=source, obj=f"context {name}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise InputError(f"not usable: {exc}", file=source, obj=f"context {name}") from None
    finally:
        logging.getLogger(_LOGGER).removeHandler(captured)
    user = loader._user
    if user is not None and user.safe_get("exec") and not (configuration.api_key or configuration.cert_file):
        why = "; ".join(captured.messages) or "it gave neither a token nor a client certificate"
        command = user["exec"].safe_get("command")
        raise InputError(f"the exec credential plugin {command!r} failed: {why}", file=source, obj=f"context {name}")
    return ApiServer(server=server.rstrip("/"), configuration=configuration, sources=files)


def _first_current_context(files: tuple[str, ...]) -> str | None:
    """The first file's ``current-context`` that sets one: client-go merges struct values
    such as it from the last file to the first (clientcmd/loader.go ``Load``), so the first
    wins; the Python client's merger lets the last win, so it is read here."""
    import yaml

    for name in files:
        path = Path(name).expanduser()
        if not path.is_file():
            continue
        try:
            doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"not a kubeconfig: {exc}", file=name) from None
        current = doc.get("current-context") if isinstance(doc, dict) else None
        if isinstance(current, str) and current:
            return current
    return None


def _token_instead(merged: Any, context: str, token: str, source: str) -> None:
    """The context's user replaced by a bearer token (its plugins never run)."""
    contexts = [c for c in merged.value.get("contexts") or [] if c["name"] == context]
    if not contexts:
        raise InputError(f"no context named {context!r}", file=source, field="contexts")
    user_name = contexts[0]["context"].safe_get("user")
    replaced = False
    for entry in merged.value.get("users") or []:
        if entry["name"] == user_name:
            entry.value["user"] = {"token": token}
            replaced = True
    if not replaced:
        merged.value["users"].append({"name": user_name or "ledgerlet-token", "user": {"token": token}})
        if not user_name:
            contexts[0]["context"].value["user"] = "ledgerlet-token"
