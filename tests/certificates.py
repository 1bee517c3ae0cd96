"""For the tests of TLS listeners: a self-signed certificate for 127.0.0.1 made with the openssl command, and
a TLS handshake between two contexts over memory."""

from __future__ import annotations

import contextlib
import shutil
import ssl
import subprocess
from pathlib import Path

import pytest


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """(certificate, key) in `folder`, valid a day for 127.0.0.1; the test is skipped without openssl."""
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            *("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"),
            *("-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def handshake(server: ssl.SSLContext, client: ssl.SSLContext, server_hostname: str) -> ssl.SSLObject | None:
    """The client's side of a TLS handshake between the two contexts over memory, once one byte has gone each
    way (None: the handshake or the exchange failed, as when the server refuses the client's certificate)."""
    incoming, outgoing, to_client, to_server = (ssl.MemoryBIO() for _ in range(4))
    server_side = server.wrap_bio(to_server, to_client, server_side=True)
    client_side = client.wrap_bio(incoming, outgoing, server_hostname=server_hostname)
    try:
        for _ in range(10):
            for side in (client_side, server_side):
                with contextlib.suppress(ssl.SSLWantReadError):
                    side.do_handshake()
            to_server.write(outgoing.read())
            incoming.write(to_client.read())
        server_side.write(b"x")
        client_side.write(b"y")
        to_server.write(outgoing.read())
        return client_side if server_side.read(1) == b"y" else None
    except ssl.SSLError:
        return None
