"""How the large `/debug` documents share the process with kube-scheduler's calls.

A document (the model dump, the gang and job lists, the queue) is rendered in small steps, handing the
event loop back between them so that a verb arriving meanwhile waits one step at most. One document
renders at a time, and after each step the stream pauses long enough that rendering takes at most a
given share of the time: a dashboard polling `/debug/state` without pause leaves the verbs their latency.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator

from fastapi.responses import StreamingResponse


class Pacing:
    """The one-at-a-time lock of a process's large documents."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()

    def streamed(self, pieces: Iterator[bytes], share: float) -> StreamingResponse:
        """A JSON body sent piece by piece, rendering at most `share` of the time while it is sent."""
        pause_per_busy_s = max(0.0, 1.0 / share - 1.0) if share > 0 else 0.0

        async def paced() -> AsyncIterator[bytes]:
            async with self.lock:
                while True:
                    started = time.perf_counter()
                    piece = next(pieces, None)
                    if piece is None:
                        return
                    if piece:
                        yield piece
                    await asyncio.sleep((time.perf_counter() - started) * pause_per_busy_s)

        return StreamingResponse(paced(), media_type="application/json")
