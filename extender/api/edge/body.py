"""The one rule for reading a request body: at most `ListenerLimits.max_body_bytes`, whole within
`ListenerLimits.body_timeout_s` of the request's first byte.

A connection of the HTTP edge (`extender.api.edge.connection`) applies it to every request it reads; the
caps, the checks and the messages a caller reads are written once, here.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.api import wire
from extender.config import ListenerLimits


class BodyTooLarge(wire.WireError):
    """The request body is over `max_body_bytes`."""


@dataclass(frozen=True, slots=True)
class BodyLimits:
    max_bytes: int
    """Largest body read, bytes."""
    timeout_s: float
    """Seconds the whole request may take to arrive."""

    @classmethod
    def of(cls, limits: ListenerLimits) -> BodyLimits:
        return cls(limits.max_body_bytes, limits.body_timeout_s)

    def check_declared(self, content_length: bytes | None) -> None:
        """Refuse a body whose declared length is over the cap before reading any of it."""
        if content_length is not None and content_length.isdigit() and int(content_length) > self.max_bytes:
            raise BodyTooLarge(
                f"request body of {int(content_length)} bytes exceeds the limit of {self.max_bytes} bytes"
            )

    def check_read(self, size: int) -> None:
        """Refuse a body once `size` bytes of it have arrived and that is over the cap."""
        if size > self.max_bytes:
            raise BodyTooLarge(f"request body exceeds the limit of {self.max_bytes} bytes")

    def timeout_message(self) -> str:
        return f"request body not received within {self.timeout_s:g} s"
