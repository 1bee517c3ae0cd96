"""A listener's TLS files read again when they change, so a certificate renewed on disk is served without a
restart.

A mounted Secret (the verbs' certificates the loops keep, cert-manager's) is updated in place by the kubelet;
`TlsFiles` looks at the files `auth` names (`--tls-cert-file`, `--tls-key-file`, `--tls-client-ca-file`) every
`TLS_FILES_REREAD_S` and, when one changed, builds the listener's context again and hands it over: new
connections use it, open ones keep what they were made with. Files that cannot be read (half-written, gone)
leave the listener serving what it had, said and tried again next round.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path

from extender.api.auth import tls_context
from extender.config import AuthSettings
from extender.k8s.rounds import InRounds, Rounds

TLS_FILES_REREAD_S = 30.0
"""Seconds between looks at a listener's TLS files (the kubelet updates a mounted Secret within a minute
or so)."""
RETRY_S = 5.0


class TlsFiles(InRounds):
    """Watches the TLS files of one listener (see the module's text)."""

    def __init__(
        self, auth: AuthSettings, on_context: Callable[[ssl.SSLContext], None], *, reread_s: float = TLS_FILES_REREAD_S
    ) -> None:
        self._auth = auth
        self._on_context = on_context
        self._paths = [p for p in (auth.tls_cert_file, auth.tls_key_file, auth.tls_client_ca_file) if p is not None]
        self._seen = self._stamps()
        self._rounds = Rounds("tls-files", self.keep, reread_s, RETRY_S)

    def _stamps(self) -> tuple[tuple[int, int, int], ...]:
        return tuple(_stamp(path) for path in self._paths)

    def keep(self) -> None:
        """One look: a new context when a file changed since the last one loaded."""
        stamps = self._stamps()
        if stamps == self._seen:
            return
        context = tls_context(self._auth)
        assert context is not None
        self._on_context(context)
        self._seen = stamps


def _stamp(path: Path) -> tuple[int, int, int]:
    status = path.stat()
    return status.st_ino, status.st_size, status.st_mtime_ns
