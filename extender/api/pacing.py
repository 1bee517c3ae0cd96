"""How the read routes share the event loop with kube-scheduler's calls: in short steps, one document at a time.

The verbs and every read route are answered on one event loop, so a verb that arrives while a route
works waits until the route hands the loop back. A route therefore computes and renders in steps: its
work is a generator (`Steps`, or `Pieces` when it writes a body) that yields wherever it may pause; the
driver here runs it piece by piece (the work between two yields) until the step has run `STEP_BUDGET_S`
or one more piece as long as the longest lately would take it past `STEP_LIMIT_S`, hands the loop back,
and goes on. A piece of work that alone may take a whole step (planning a gang) is preceded by
`HAND_BACK`, which ends the step there: that piece starts a step of its own, is not counted among the
usual pieces, and a verb waits one plan at most. After each step the driver pauses long enough that the
work takes at most a given share of the time (`Settings.debug_render_share`), and the documents that
read the model (`Pacing`) are worked on one at a time: a dashboard polling `/debug/state` without pause
leaves the verbs their latency.
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import AsyncIterator, Generator, Iterable, Mapping
from itertools import islice
from typing import Any, TypeVar

import orjson
from fastapi.responses import StreamingResponse

from extender.policy.core.frozenmap import FrozenMap

T = TypeVar("T")

STEP_LIMIT_S = 0.001
"""Longest one step of a read route should hold the event loop, seconds (what a verb arriving meanwhile
may wait; met at 5000 nodes except by a gang's plan, see docs/performance.md). A step takes no further
piece of work once a piece as long as the longest of this step or the step before would take it past
this."""
STEP_BUDGET_S = STEP_LIMIT_S / 2
"""Nor once it has run this long, seconds: short pieces make steps of about this length."""


class HandBack:
    """The type of `HAND_BACK`."""


HAND_BACK = HandBack()
"""Yielded by stepped work where the step must end: before a piece that alone may take a step (a plan)."""
SORTED_RUN_ITEMS = 512
"""Items `sorted_in_steps` sorts or merges, or `encoded_in_steps` encodes, between two pauses (a fraction
of a millisecond)."""

Piece = bytes | HandBack | None
"""What stepped work yields: body bytes, `None` (it may pause here) or `HAND_BACK` (it pauses here)."""
Steps = Generator[Piece, None, T]
"""Stepped work that returns a result (its pieces' bytes, if any, are dropped)."""
Pieces = Iterable[Piece]
"""Stepped work that writes a body: the bytes it yields, in order."""


class Pacing:
    """The one-at-a-time lock of a process's documents that read the model, and their drivers."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()

    def streamed(self, pieces: Pieces, share: float, media_type: str = "application/json") -> StreamingResponse:
        """A body sent step by step, once the documents before it are done, working at most `share` of the time."""

        async def paced() -> AsyncIterator[bytes]:
            async with self.lock:
                async for output in step_outputs(whole(pieces), share, []):
                    yield output

        return StreamingResponse(paced(), media_type=media_type)

    async def computed(self, work: Steps[T], share: float) -> T:
        """`work`'s result, computed once the documents before it are done, at most `share` of the time."""
        async with self.lock:
            return await in_steps(work, share)


async def in_steps(work: Steps[T], share: float = 1.0) -> T:
    """`work`'s result, computed in steps handing the loop back in between (for small documents that need
    not wait for the large ones)."""
    returned: list[T] = []
    async for _ in step_outputs(work, share, returned):
        pass
    return returned[0]


def keys_in_steps(*mappings: Mapping[str, object]) -> Steps[set[str]]:
    """The keys of `mappings`, a bucket at a time of those that are `FrozenMap`s (the model's maps of
    thousands)."""
    keys: set[str] = set()
    for mapping in mappings:
        for bucket in mapping.buckets() if isinstance(mapping, FrozenMap) else (mapping,):
            keys.update(bucket)
            yield None
    return keys


def encoded_in_steps(document: Mapping[str, Any]) -> Steps[bytes]:
    """`document` as JSON (what `orjson.dumps` writes), a member at a time and a long list's items
    `SORTED_RUN_ITEMS` at a time."""
    members: list[bytes] = []
    for key, value in document.items():
        name = orjson.dumps(key) + b":"
        if isinstance(value, list) and len(value) > SORTED_RUN_ITEMS:
            parts: list[bytes] = []
            for start in range(0, len(value), SORTED_RUN_ITEMS):
                parts.append(orjson.dumps(value[start : start + SORTED_RUN_ITEMS])[1:-1])
                yield None
            members.append(name + b"[" + b",".join(parts) + b"]")
        else:
            members.append(name + orjson.dumps(value))
        yield None
    return b"{" + b",".join(members) + b"}"


def sorted_in_steps(items: Iterable[str], first: int | None = None) -> Steps[list[str]]:
    """`sorted(items)[:first]`, pausing every `SORTED_RUN_ITEMS` items: runs sorted one at a time, then
    merged."""
    listed = list(items)
    runs: list[list[str]] = []
    for start in range(0, len(listed), SORTED_RUN_ITEMS):
        runs.append(sorted(listed[start : start + SORTED_RUN_ITEMS]))
        yield None
    merged: list[str] = []
    wanted = islice(heapq.merge(*runs), first)
    while batch := list(islice(wanted, SORTED_RUN_ITEMS)):
        merged += batch
        yield None
    return merged


def whole(pieces: Pieces) -> Steps[None]:
    """Pieces as stepped work that returns nothing."""
    yield from pieces


async def step_outputs(work: Steps[T], share: float, returned: list[T]) -> AsyncIterator[bytes]:
    """Run `work` step by step, yielding the bytes each step wrote (steps that wrote nothing yield nothing)
    and pausing after each; `work`'s result is appended to `returned` at the end."""
    pause_per_busy_s = max(0.0, 1.0 / share - 1.0) if share > 0 else 0.0
    longest_before_s = 0.0
    handed_back = False
    while True:
        started = ended = time.perf_counter()
        longest_piece_s = 0.0
        output: list[bytes] = []
        finished = False
        while True:
            try:
                piece = next(work)
            except StopIteration as done:
                returned.append(done.value)
                finished = True
                break
            took, ended = ended, time.perf_counter()
            if not handed_back:
                longest_piece_s = max(longest_piece_s, ended - took)
            if isinstance(piece, HandBack):
                handed_back = True
                break
            handed_back = False
            if piece:
                output.append(piece)
            busy_s = ended - started
            if busy_s >= STEP_BUDGET_S or busy_s + max(longest_piece_s, longest_before_s) >= STEP_LIMIT_S:
                break
        longest_before_s = longest_piece_s
        busy_s = time.perf_counter() - started
        if output:
            yield b"".join(output)
        if finished:
            return
        await asyncio.sleep(busy_s * pause_per_busy_s)
