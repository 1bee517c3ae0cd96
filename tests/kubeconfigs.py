"""A kubeconfig for tests that reach no API server, or one that refuses every connection."""

from __future__ import annotations

from pathlib import Path

import yaml

UNREACHABLE = "https://127.0.0.1:1"
"""A server address where nothing listens."""


def kubeconfig_file(folder: Path, user: dict[str, str] | None = None, server: str = UNREACHABLE) -> Path:
    """`folder/kubeconfig`: one cluster at `server` (TLS unverified), its current context's user `user` (a
    bearer token `t` by default), and another user the context does not name."""
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "other", "user": {"token": "not-this"}}, {"name": "u", "user": user or {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    }
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path
