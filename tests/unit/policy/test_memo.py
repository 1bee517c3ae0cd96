"""The identity memo: the same tuple object gets the same value; an equal but other tuple does not."""

from __future__ import annotations

from extender.policy.memo import by_identity


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
