"""Where a connection of the HTTP edge stands: what it is reading, why it is paused, how far it is trusted.

A connection reads its requests one after another (`Reading`), and every move between reading states is
one of the transitions of `READING_MOVES`; any other move is a bug, refused loudly (`IllegalMove`), as
h11 keeps its state machine in one table (the states and events are `IntEnum`s: the table and the pause set
hash them at C speed, on every request). Pausing is orthogonal to the reading state: the socket is read
only while no `Pause` reason holds. `Standing` is what the listener's door (`extender.api.edge.door`)
weighs when the connections outnumber the slots: a connection that has not finished a request yet can be
displaced, one that has (or that authenticated) cannot.
"""

from __future__ import annotations

from enum import Enum, IntEnum, auto


class Reading(IntEnum):
    IDLE = auto()
    """Between requests: waiting for the first byte of the next one (of the first one, on a new connection)."""
    HEAD = auto()
    """A request has begun; its line and headers are arriving (capped in bytes, lines and time)."""
    BODY = auto()
    """The head is complete; the body is arriving (capped in bytes and time)."""
    DONE = auto()
    """Nothing more is read: a refusal left input unread, the listener stops, or the connection closes."""


class ReadEvent(IntEnum):
    BEGIN = auto()
    HEAD_COMPLETE = auto()
    MESSAGE_COMPLETE = auto()
    REFUSE = auto()
    END = auto()


READING_MOVES: dict[tuple[Reading, ReadEvent], Reading] = {
    (Reading.IDLE, ReadEvent.BEGIN): Reading.HEAD,
    (Reading.HEAD, ReadEvent.HEAD_COMPLETE): Reading.BODY,
    (Reading.BODY, ReadEvent.MESSAGE_COMPLETE): Reading.IDLE,
    (Reading.IDLE, ReadEvent.REFUSE): Reading.DONE,
    (Reading.HEAD, ReadEvent.REFUSE): Reading.DONE,
    (Reading.BODY, ReadEvent.REFUSE): Reading.DONE,
    (Reading.IDLE, ReadEvent.END): Reading.DONE,
    (Reading.HEAD, ReadEvent.END): Reading.DONE,
    (Reading.BODY, ReadEvent.END): Reading.DONE,
    (Reading.DONE, ReadEvent.END): Reading.DONE,
    (Reading.DONE, ReadEvent.REFUSE): Reading.DONE,
}
"""Every legal move of a connection's reading side: (state, event) → next state."""


class IllegalMove(RuntimeError):
    """A reading move outside `READING_MOVES`."""


def next_reading(state: Reading, event: ReadEvent) -> Reading:
    try:
        return READING_MOVES[state, event]
    except KeyError:
        raise IllegalMove(f"{event.name} while reading is {state.name}") from None


class Pause(IntEnum):
    """Why a connection's socket is not read for now (it is read again once no reason holds)."""

    QUEUE = auto()
    """As many requests as a connection may read ahead wait for their replies."""
    BACKLOG = auto()
    """Its requests read ahead and replies not yet taken by the client are over `max_backlog_bytes`."""
    WRITING = auto()
    """The client does not take its replies fast enough (the transport's write buffer is full)."""
    BUFFERED = auto()
    """The listener's connections hold more than `max_buffered_bytes` together (unproven ones pause)."""
    RATE = auto()
    """The listener has answered `requests_per_s` requests in the last second."""
    ANSWERING = auto()
    """A refusal is being answered: nothing more is read (the connection closes after it)."""


class Standing(Enum):
    """How far the listener trusts a connection, as its door weighs it."""

    FRESH = auto()
    """No request finished yet: it may be displaced by a newcomer when every slot is held."""
    PROVEN = auto()
    """A request was answered on it (no authentication configured, or an open path)."""
    AUTHENTICATED = auto()
    """Its TLS client certificate or a bearer token of one of its requests was accepted."""


class Place(Enum):
    """Where the door put a new connection."""

    SLOT = auto()
    """Served."""
    OVERFLOW = auto()
    """Past the limits: its first request is read and answered with a JSON 503 (unless it authenticates and
    a slot reserved for authenticated connections is free), then it is closed."""
    REFUSED = auto()
    """Past the overflow too: closed at once, unanswered."""
