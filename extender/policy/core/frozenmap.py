"""A copy-on-write map whose frozen views are immutable snapshots that cost O(changes) to take.

Keys are spread over a fixed number of buckets. `freeze()` hands out the current buckets as an immutable
`FrozenMap` and marks them shared; the next write to a shared bucket copies that one bucket first. So a
snapshot costs O(buckets), and an event applied after it costs O(size / buckets) once per bucket — never
a copy of the whole cluster, however many readers hold older snapshots. `with_entries` derives a frozen map
with a few entries more the same way, copying only the buckets they go to (a what-if's snapshot).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, Mapping, ValuesView
from typing import Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
D = TypeVar("D")

BUCKET_COUNT = 256
"""Buckets per map: a snapshot costs this many pointer copies; a write copies size/BUCKET_COUNT entries."""


class FrozenMap(Mapping[K, V], Generic[K, V]):
    """An immutable mapping sharing its buckets with the `CowMap` it was frozen from."""

    __slots__ = ("_buckets", "_length")

    def __init__(self, buckets: tuple[dict[K, V], ...], length: int) -> None:
        self._buckets = buckets
        self._length = length

    def __getitem__(self, key: K) -> V:
        return self._buckets[hash(key) % len(self._buckets)][key]

    @overload
    def get(self, key: K, /) -> V | None: ...
    @overload
    def get(self, key: K, default: V | D, /) -> V | D: ...
    def get(self, key: K, default: V | D | None = None) -> V | D | None:
        return self._buckets[hash(key) % len(self._buckets)].get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._buckets[hash(key) % len(self._buckets)]

    def __iter__(self) -> Iterator[K]:
        for bucket in self._buckets:
            yield from bucket

    def __len__(self) -> int:
        return self._length

    def values(self) -> ValuesView[V]:
        return _Values(self._buckets, self._length)

    def buckets(self) -> tuple[Mapping[K, V], ...]:
        """The buckets themselves (read-only by contract): for walks that pause between small steps."""
        return self._buckets

    def items(self) -> ItemsView[K, V]:
        return _Items(self._buckets, self._length)


class _Values(ValuesView[V]):
    """A FrozenMap's values, read straight from its buckets (the generic view looks each key up again)."""

    __slots__ = ("_buckets", "_length")

    def __init__(self, buckets: tuple[dict[K, V], ...], length: int) -> None:
        self._buckets = buckets
        self._length = length

    def __iter__(self) -> Iterator[V]:
        for bucket in self._buckets:
            yield from bucket.values()

    def __len__(self) -> int:
        return self._length

    def __contains__(self, value: object) -> bool:
        return any(value in bucket.values() for bucket in self._buckets)


class _Items(ItemsView[K, V]):
    """A FrozenMap's items, read straight from its buckets."""

    __slots__ = ("_buckets", "_length")

    def __init__(self, buckets: tuple[dict[K, V], ...], length: int) -> None:
        self._buckets = buckets
        self._length = length

    def __iter__(self) -> Iterator[tuple[K, V]]:
        for bucket in self._buckets:
            yield from bucket.items()

    def __len__(self) -> int:
        return self._length

    def __contains__(self, item: object) -> bool:
        if not isinstance(item, tuple) or len(item) != 2:
            return False
        bucket = self._buckets[hash(item[0]) % len(self._buckets)]
        return item[0] in bucket and bool(bucket[item[0]] == item[1])


def empty_frozen_map() -> FrozenMap[K, V]:
    return FrozenMap(({},), 0)


def with_entries(mapping: Mapping[K, V], added: Mapping[K, V]) -> Mapping[K, V]:
    """`mapping` with the entries of `added` set, `mapping` left as it was: of a `FrozenMap` only the buckets
    `added` writes to are copied (size / buckets entries each), any other mapping is copied whole."""
    if not isinstance(mapping, FrozenMap):
        return {**mapping, **added}
    buckets = list(mapping._buckets)
    copied: set[int] = set()
    length = mapping._length
    for key, value in added.items():
        index = hash(key) % len(buckets)
        if index not in copied:
            buckets[index] = dict(buckets[index])
            copied.add(index)
        length += key not in buckets[index]
        buckets[index][key] = value
    return FrozenMap(tuple(buckets), length)


class CowMap(Generic[K, V]):
    """The mutable side: a map that can be frozen cheaply and repeatedly."""

    __slots__ = ("_buckets", "_frozen", "_length", "_owned")

    def __init__(self, bucket_count: int = BUCKET_COUNT) -> None:
        self._buckets: list[dict[K, V]] = [{} for _ in range(bucket_count)]
        self._owned = [True] * bucket_count
        self._length = 0
        self._frozen: FrozenMap[K, V] | None = None

    def _writable(self, key: K) -> dict[K, V]:
        self._frozen = None
        index = hash(key) % len(self._buckets)
        if not self._owned[index]:
            self._buckets[index] = dict(self._buckets[index])
            self._owned[index] = True
        return self._buckets[index]

    def get(self, key: K) -> V | None:
        return self._buckets[hash(key) % len(self._buckets)].get(key)

    def __contains__(self, key: K) -> bool:
        return key in self._buckets[hash(key) % len(self._buckets)]

    def __len__(self) -> int:
        return self._length

    def values(self) -> Iterator[V]:
        for bucket in self._buckets:
            yield from bucket.values()

    def __iter__(self) -> Iterator[K]:
        for bucket in self._buckets:
            yield from bucket

    def set(self, key: K, value: V) -> None:
        bucket = self._writable(key)
        if key not in bucket:
            self._length += 1
        bucket[key] = value

    def delete(self, key: K) -> V | None:
        if key not in self:
            return None
        self._length -= 1
        return self._writable(key).pop(key)

    def clear(self) -> None:
        self._buckets = [{} for _ in self._buckets]
        self._owned = [True] * len(self._buckets)
        self._length = 0
        self._frozen = None

    def freeze(self) -> FrozenMap[K, V]:
        """The current content, immutable; the same object until the map is written again."""
        if self._frozen is None:
            self._owned = [False] * len(self._buckets)
            self._frozen = FrozenMap(tuple(self._buckets), self._length)
        return self._frozen
