"""The memos: the same tuple object gets the same value and an equal but other tuple does not; an equal
key gets the value remembered for it."""

from __future__ import annotations

import pytest

from extender.policy.core.memo import by_identity, by_value


def test_a_value_is_remembered_for_the_very_tuple_and_the_memo_is_bounded() -> None:
    memo: dict[int, tuple[tuple[object, ...], list[str]]] = {}
    made: list[tuple[object, ...]] = []

    def make(key: tuple[object, ...]) -> list[str]:
        made.append(key)
        return [str(item) for item in key]

    first = ("a", "b")
    value = by_identity(memo, first, 2, lambda: make(first))
    assert by_identity(memo, first, 2, lambda: make(first)) is value
    other = first[:1] + first[1:]
    assert by_identity(memo, other, 2, lambda: make(other)) == value
    assert len(made) == 2, "an equal tuple that is another object is made afresh"
    third = ("c",)
    by_identity(memo, third, 2, lambda: make(third))
    assert list(memo) == [id(third)], "a full memo starts afresh"


def test_a_value_is_remembered_for_an_equal_key_a_failure_is_not_and_the_memo_is_bounded() -> None:
    memo: dict[str, int] = {}
    made: list[str] = []

    def make(key: str) -> int:
        made.append(key)
        if key == "bad":
            raise ValueError(key)
        return len(key)

    assert by_value(memo, "ab", 2, lambda: make("ab")) == 2
    assert by_value(memo, "a" + "b", 2, lambda: make("ab")) == 2
    assert made == ["ab"], "an equal key is answered from the memo"
    with pytest.raises(ValueError):
        by_value(memo, "bad", 2, lambda: make("bad"))
    assert "bad" not in memo, "nothing is kept for a value that could not be made"
    by_value(memo, "c", 2, lambda: make("c"))
    by_value(memo, "d", 2, lambda: make("d"))
    assert memo == {"d": 1}, "a full memo starts afresh"
