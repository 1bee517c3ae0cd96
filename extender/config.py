"""Service settings: where to listen, where the cluster is, limits of the HTTP layer, and the policy's
settings. Built once from the command line and passed explicitly; nothing reads it from a global."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from extender.policy.settings import PolicySettings


@dataclass(frozen=True, slots=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 8888
    kubeconfig: str | None = None
    """Path of a kubeconfig; None means in-cluster credentials (or the default kubeconfig)."""
    cluster_snapshot: Path | None = None
    """Serve from this file instead of an API server (offline mode)."""
    max_body_bytes: int = 64 * 2**20
    """Requests larger than this (bytes) are refused with an `Error`; a 5000-node NodeList is ~63 MiB."""
    decision_history: int = 256
    """How many recent decisions `/debug/decisions` keeps."""
    keep_alive_s: int = 120
    """HTTP keep-alive (seconds); longer than Go's 90 s idle timeout, so kube-scheduler never reuses a
    connection the server has just closed."""
    policy: PolicySettings = field(default_factory=PolicySettings)
