"""The reading states of a connection: every legal move in one table, anything else refused."""

from __future__ import annotations

import pytest

from extender.api.edge.states import READING_MOVES, IllegalMove, ReadEvent, Reading, next_reading


def test_a_request_is_read_head_then_body_then_the_connection_is_idle_again() -> None:
    state = Reading.IDLE
    for event in (ReadEvent.BEGIN, ReadEvent.HEAD_COMPLETE, ReadEvent.MESSAGE_COMPLETE):
        state = next_reading(state, event)
    assert state is Reading.IDLE


@pytest.mark.parametrize("state", list(Reading))
def test_a_refusal_or_the_end_leaves_nothing_more_to_read_from_any_state(state: Reading) -> None:
    assert next_reading(state, ReadEvent.REFUSE) is Reading.DONE
    assert next_reading(state, ReadEvent.END) is Reading.DONE


def test_moves_outside_the_table_are_refused() -> None:
    illegal = [(state, event) for state in Reading for event in ReadEvent if (state, event) not in READING_MOVES]
    assert (Reading.IDLE, ReadEvent.HEAD_COMPLETE) in illegal and (Reading.DONE, ReadEvent.BEGIN) in illegal
    for state, event in illegal:
        with pytest.raises(IllegalMove):
            next_reading(state, event)
