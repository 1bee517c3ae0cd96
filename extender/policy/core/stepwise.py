"""Work a reader may spread over several turns: a generator that yields `None` wherever it may pause and
returns its result.

The policy runs such work whole (`run_whole`), as one call. A reader that must not hold its thread for
long — the debug views, answered on the event loop that also answers kube-scheduler's calls — runs the
same generator a few yields at a time and does other work between them. Pausing changes nothing in the
result: the work reads immutable inputs only.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

T = TypeVar("T")

Steps = Generator[None, None, T]
"""Work that yields `None` where it may pause and returns its result."""


def run_whole(steps: Generator[object, None, T]) -> T:
    """The result of `steps`, run to its end without pausing (whatever they yield is dropped)."""
    while True:
        try:
            next(steps)
        except StopIteration as done:
            result: T = done.value
            return result
