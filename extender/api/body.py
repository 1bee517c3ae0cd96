"""The one rule for reading a request body: at most `Settings.max_body_bytes`, whole within `Settings.body_timeout_s`.

The verb listener's HTTP server (`extender.api.edge`) applies it to every request it reads, and the ASGI
entry of the verbs (`extender.api.verbs.VerbGateway`, what in-process test clients and other ASGI servers
call) applies the same limits through the same object, so the caps, the checks and the messages a caller
reads are written once.
"""

from __future__ import annotations

from dataclasses import dataclass

from extender.api import wire
from extender.config import Settings


class BodyTooLarge(wire.WireError):
    """The request body is over `max_body_bytes`."""


@dataclass(frozen=True, slots=True)
class BodyLimits:
    max_bytes: int
    """Largest body read, bytes."""
    timeout_s: float
    """Seconds the whole request may take to arrive."""

    @classmethod
    def of(cls, settings: Settings) -> BodyLimits:
        return cls(settings.verb_limits.max_body_bytes, settings.verb_limits.body_timeout_s)

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

    def timeout_message(self, *, headers_complete: bool = True) -> str:
        what = "request body" if headers_complete else "request"
        return f"{what} not received within {self.timeout_s:g} s"
