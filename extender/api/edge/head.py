"""The caps on a request head: its request line, each header line, all of it, how many headers, how long.

httptools parses a request head in C and hands the connection its pieces (`on_url` in pieces,
`on_header` per whole header). `HeadMeter` counts them and raises `HeadRefused` from inside the callback
the moment a cap is passed, which stops the parser there: a flood of tiny headers costs at most
`max_headers` callbacks, a request target or a header line that never ends at most the bytes of the caps
(plus one read from the socket, checked after it is parsed: httptools keeps an unfinished header to
itself until its end).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from extender.config import ListenerLimits

HEADER_LINE_OVERHEAD = 4
"""Bytes of a header line besides its name and value: `: ` and CRLF."""


class HeadRefused(Exception):
    """The head is over a cap: the status to answer (414, 431) and why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(slots=True)
class HeadMeter:
    """What one request head has used of `limits` so far."""

    limits: ListenerLimits
    target: int = 0
    headers: int = 0
    header_bytes: int = 0
    unparsed: int = 0
    """Bytes fed while this head was incomplete and the parser did not hand over (an unfinished line)."""

    def restart(self) -> None:
        """A new request begins."""
        self.target = self.headers = self.header_bytes = self.unparsed = 0

    def on_target(self, piece: bytes) -> None:
        self.target += len(piece)
        if self.target > self.limits.max_line_bytes:
            raise HeadRefused(414, f"request target longer than {self.limits.max_line_bytes} bytes")

    def count_headers(self, headers: Sequence[tuple[bytes, bytes]], last: tuple[bytes, bytes] | None = None) -> None:
        """Count the header lines parsed (`headers`, and `last`, the one just handed over), refusing them past a
        cap. The connection calls this only once the line just handed over is long, many came already, or the
        head is large: a flood of tiny headers is stopped at `max_headers` callbacks, and a head within the
        caps costs a sum of lengths."""
        lines = [*headers, last] if last is not None else headers
        if len(lines) > self.limits.max_headers:
            raise HeadRefused(431, f"more than {self.limits.max_headers} header lines")
        longest = max((len(name) + len(value) for name, value in lines), default=0) + HEADER_LINE_OVERHEAD
        if longest > self.limits.max_line_bytes:
            raise HeadRefused(431, f"a header line longer than {self.limits.max_line_bytes} bytes")
        self.headers = len(lines)
        self.header_bytes = sum(len(name) + len(value) for name, value in lines) + HEADER_LINE_OVERHEAD * len(lines)
        self.check_total(0)

    def check_total(self, unparsed: int) -> None:
        """Refuse once the head (what was parsed, and `unparsed` bytes of it still held by the parser) is over
        `max_head_bytes`."""
        self.unparsed = unparsed
        if self.target + self.header_bytes + unparsed > self.limits.max_head_bytes:
            raise HeadRefused(431, f"request head larger than {self.limits.max_head_bytes} bytes")
