"""Copy-on-write maps and their frozen views (`extender.policy.core.frozenmap`)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.policy.core.frozenmap import CowMap, FrozenMap, empty_frozen_map


def filled(count: int, bucket_count: int = 4) -> CowMap[str, int]:
    cow: CowMap[str, int] = CowMap(bucket_count)
    for index in range(count):
        cow.set(f"k{index}", index)
    return cow


def test_a_frozen_view_does_not_see_later_writes() -> None:
    cow = filled(10)
    frozen = cow.freeze()
    cow.set("k0", 100)
    cow.set("new", 7)
    cow.delete("k1")
    assert dict(frozen) == {f"k{i}": i for i in range(10)}
    assert cow.get("k0") == 100
    assert cow.get("new") == 7
    assert "k1" not in cow
    assert len(cow) == 10  # 10 - k1 + new


def test_writes_after_freeze_copy_only_the_bucket_they_touch() -> None:
    cow: CowMap[int, str] = CowMap(4)  # an int hashes to itself: key k lives in bucket k % 4
    for key in range(8):
        cow.set(key, "old")
    first = cow.freeze()
    cow.set(5, "new")  # bucket 1 is copied before the write
    second = cow.freeze()
    assert first._buckets[1] is not second._buckets[1]
    assert all(first._buckets[i] is second._buckets[i] for i in (0, 2, 3))
    assert (first[5], second[5]) == ("old", "new")
    assert (first[1], second[1]) == ("old", "old")


def test_freezing_twice_without_writes_shares_everything() -> None:
    cow = filled(5)
    first, second = cow.freeze(), cow.freeze()
    assert all(a is b for a, b in zip(first._buckets, second._buckets, strict=True))
    assert first == second


def test_frozen_map_reads_like_a_mapping() -> None:
    frozen = filled(3).freeze()
    assert len(frozen) == 3
    assert sorted(frozen) == ["k0", "k1", "k2"]
    assert frozen["k2"] == 2
    assert frozen.get("k2") == 2
    assert frozen.get("missing") is None
    assert frozen.get("missing", -1) == -1
    assert "k1" in frozen
    assert "missing" not in frozen
    assert dict(frozen.items()) == {"k0": 0, "k1": 1, "k2": 2}
    assert frozen == {"k0": 0, "k1": 1, "k2": 2}


def test_the_empty_frozen_map() -> None:
    empty: FrozenMap[str, int] = empty_frozen_map()
    assert len(empty) == 0
    assert list(empty) == []
    assert empty.get("x") is None
    assert "x" not in empty


def test_delete_of_a_missing_key_changes_nothing() -> None:
    cow = filled(2)
    assert cow.delete("missing") is None
    assert cow.delete("k0") == 0
    assert len(cow) == 1


def test_clear_leaves_frozen_views_intact() -> None:
    cow = filled(6)
    frozen = cow.freeze()
    cow.clear()
    assert len(cow) == 0
    assert list(cow) == []
    assert len(frozen) == 6
    assert sorted(cow.freeze()) == []


def test_values_and_iteration_of_the_mutable_side() -> None:
    cow = filled(4)
    assert sorted(cow) == ["k0", "k1", "k2", "k3"]
    assert sorted(cow.values()) == [0, 1, 2, 3]


Operation = tuple[str, str, int]
operations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.sampled_from("abcdefgh"), st.integers(0, 9)),
        st.tuples(st.just("delete"), st.sampled_from("abcdefgh"), st.just(0)),
        st.tuples(st.just("freeze"), st.just(""), st.just(0)),
        st.tuples(st.just("clear"), st.just(""), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(operations, st.sampled_from([1, 3, 256]))
def test_behaves_like_a_dict_and_every_frozen_view_like_a_copy(ops: list[Operation], bucket_count: int) -> None:
    cow: CowMap[str, int] = CowMap(bucket_count)
    model: dict[str, int] = {}
    views: list[tuple[FrozenMap[str, int], dict[str, int]]] = []
    for op, key, value in ops:
        if op == "set":
            cow.set(key, value)
            model[key] = value
        elif op == "delete":
            assert cow.delete(key) == model.pop(key, None)
        elif op == "clear":
            cow.clear()
            model.clear()
        else:
            views.append((cow.freeze(), dict(model)))
        assert len(cow) == len(model)
        assert sorted(cow) == sorted(model)
    views.append((cow.freeze(), dict(model)))
    for frozen, expected in views:
        assert len(frozen) == len(expected)
        assert dict(frozen) == expected
        assert sorted(frozen) == sorted(expected)
        for key in "abcdefgh":
            assert (key in frozen) is (key in expected)
            assert frozen.get(key) == expected.get(key)
