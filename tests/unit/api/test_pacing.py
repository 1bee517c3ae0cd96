"""The pacing driver: steps bounded by `STEP_LIMIT_S`, a handed-back piece alone in its step, the bytes in
order, one document at a time, and the stepped helpers' results equal to the whole computations'."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator, Sequence

import orjson
import pytest

from extender.api import pacing
from extender.api.pacing import (
    HAND_BACK,
    STEP_BUDGET_S,
    STEP_LIMIT_S,
    Pacing,
    Piece,
    encoded_in_steps,
    in_steps,
    keys_in_steps,
    sorted_in_steps,
    step_outputs,
)
from extender.policy.core.frozenmap import FrozenMap
from extender.policy.core.stepwise import run_whole


class WorkClock:
    """A clock that moves only when the work says it took time (`spend`), so steps are exact."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def spend(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> WorkClock:
    fake = WorkClock()
    monkeypatch.setattr("extender.api.pacing.time.perf_counter", fake)
    return fake


def timed_pieces(clock: WorkClock, costs: Sequence[float | None]) -> Iterator[Piece]:
    """One piece per cost (its index as bytes, then a comma); `None` hands the loop back first, then the
    piece costs twice the step limit: a plan."""
    for index, cost in enumerate(costs):
        if cost is None:
            yield HAND_BACK
            cost = 2 * STEP_LIMIT_S
        clock.spend(cost)
        yield f"{index},".encode()


def steps_of(pieces: Iterator[Piece], clock: WorkClock) -> list[tuple[list[int], float]]:
    """Each step's pieces (by index) and how long it took."""

    async def run() -> list[tuple[list[int], float]]:
        steps = []
        started = clock.now
        async for output in step_outputs(pacing.whole(pieces), 1.0, []):
            steps.append(([int(index) for index in output.decode().split(",") if index], clock.now - started))
            started = clock.now
        return steps

    return asyncio.run(run())


def test_short_pieces_make_steps_of_the_budget_and_keep_their_order(clock: WorkClock) -> None:
    steps = steps_of(timed_pieces(clock, [STEP_BUDGET_S / 4] * 12), clock)
    assert [indices for indices, _ in steps] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_no_step_passes_the_limit_while_no_piece_is_longer_than_half_of_it(clock: WorkClock) -> None:
    costs = [random.Random(seed).uniform(0, STEP_LIMIT_S / 2) for seed in range(400)]
    steps = steps_of(timed_pieces(clock, costs), clock)
    assert [index for indices, _ in steps for index in indices] == list(range(400))
    assert max(took for _, took in steps) <= STEP_LIMIT_S


def test_a_handed_back_piece_is_alone_in_its_step_and_does_not_shorten_the_others(clock: WorkClock) -> None:
    costs: list[float | None] = [STEP_BUDGET_S / 4] * 3 + [None] + [STEP_BUDGET_S / 4] * 8
    steps = steps_of(timed_pieces(clock, costs), clock)
    assert [indices for indices, _ in steps] == [[0, 1, 2], [3], [4, 5, 6, 7], [8, 9, 10, 11]]


def test_a_long_piece_ends_the_steps_that_follow_it_before_they_pass_the_limit(clock: WorkClock) -> None:
    costs = [STEP_LIMIT_S * 0.9] + [STEP_BUDGET_S / 4] * 6
    steps = steps_of(timed_pieces(clock, costs), clock)
    assert [indices for indices, _ in steps] == [[0], [1], [2, 3, 4, 5], [6]]
    assert all(took <= STEP_LIMIT_S for _, took in steps[1:])


def test_documents_are_computed_one_at_a_time() -> None:
    order: list[str] = []

    def work(name: str) -> pacing.Steps[str]:
        for step in range(3):
            order.append(f"{name}{step}")
            yield HAND_BACK
        return name

    async def both() -> list[str]:
        shared = Pacing()
        return list(await asyncio.gather(shared.computed(work("a"), 1.0), shared.computed(work("b"), 1.0)))

    assert asyncio.run(both()) == ["a", "b"]
    assert order == ["a0", "a1", "a2", "b0", "b1", "b2"]


def test_the_stepped_helpers_answer_what_the_whole_computations_answer() -> None:
    names = [f"node-{random.Random(seed).randrange(10**6):07d}" for seed in range(3000)]
    assert run_whole(sorted_in_steps(names)) == sorted(names)
    assert run_whole(sorted_in_steps(names, 100)) == sorted(names)[:100]
    document = {"generation": 3, "rows": [{"name": name} for name in names], "empty": [], "nested": {"a": [1]}}
    assert run_whole(encoded_in_steps(document)) == orjson.dumps(document)
    assert asyncio.run(in_steps(encoded_in_steps(document))) == orjson.dumps(document)
    model_map = FrozenMap(({"a": 1, "b": 2}, {"c": 3}), 3)
    assert run_whole(keys_in_steps(model_map, {"d": 4, "a": 5})) == {"a", "b", "c", "d"}
