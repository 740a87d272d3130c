"""Where the facade is mounted in the audit API and what its root lists."""

from __future__ import annotations

from typing import Final

PREFIX: Final = "/k8s"
#: what the root lists (``GET /``)
ROOT_PATHS: Final = ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]
