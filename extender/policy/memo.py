"""Bounded memos of values derived from immutable inputs.

`by_identity` remembers a value computed from a tuple under the tuple's identity: the same tuple object
(kube-scheduler's candidate list, decoded once at the edge into one tuple and reused call after call)
gets the same value without hashing or comparing its items. The memo holds the tuple itself, so its id
cannot pass to another object while the entry stands; a full memo starts afresh.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def by_identity(
    memo: dict[int, tuple[tuple[object, ...], T]], key: tuple[object, ...], limit: int, make: Callable[[], T]
) -> T:
    """`memo`'s value for this very tuple, made with `make()` and kept (at most `limit` entries) if absent."""
    known = memo.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    value = make()
    if len(memo) >= limit:
        memo.clear()
    memo[id(key)] = (key, value)
    return value
