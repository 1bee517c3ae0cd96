"""Bounded memos of values derived from immutable inputs; a full memo starts afresh.

`by_value` remembers a value under an equal key (a request bag, a quantity, a node set). `by_identity`
remembers a value computed from a tuple under the tuple's identity: the same tuple object
(kube-scheduler's candidate list, decoded once at the edge into one tuple and reused call after call)
gets the same value without hashing or comparing its items. The memo holds the tuple itself, so its id
cannot pass to another object while the entry stands. `keep` is the bounded store both use, for callers
that decide themselves whether a value is worth keeping.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def keep(memo: dict[K, T], key: K, value: T, limit: int) -> T:
    """Store `value` under `key`, first emptying `memo` when it already holds `limit` entries."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value


def by_value(memo: dict[K, T], key: K, limit: int, make: Callable[[], T]) -> T:
    """`memo`'s value for `key`, made with `make()` and kept (at most `limit` entries) if absent."""
    known = memo.get(key)
    return keep(memo, key, make(), limit) if known is None else known


def by_identity(
    memo: dict[int, tuple[tuple[object, ...], T]], key: tuple[object, ...], limit: int, make: Callable[[], T]
) -> T:
    """`memo`'s value for this very tuple, made with `make()` and kept (at most `limit` entries) if absent."""
    known = memo.get(id(key))
    if known is not None and known[0] is key:
        return known[1]
    return keep(memo, id(key), (key, make()), limit)[1]
