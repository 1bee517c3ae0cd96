"""The door of a listener in its own terms: slots, the reserve for authenticated connections, one client's
share, displacement of fresh connections, the overflow, the rates and the bytes held."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from extender.api.edge.door import FRESH_GRACE_S, Door, TokenBucket
from extender.api.edge.states import Place, Standing
from extender.config import ListenerLimits

LIMITS = ListenerLimits(max_connections=4, reserved_for_authenticated=1, max_connections_per_peer=2, overflow_replies=2)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@dataclass(eq=False)
class Socket:
    peer: str = "10.0.0.1"
    standing: Standing = Standing.FRESH
    place: Place = Place.REFUSED
    accepted_at: float = 0.0
    displaced: list[bool] = field(default_factory=list)

    def displace(self) -> None:
        self.displaced.append(True)


def door(*, authenticates: bool = True, limits: ListenerLimits = LIMITS) -> tuple[Door, Clock]:
    clock = Clock()
    return Door(limits, authenticates=authenticates, clock=clock), clock


def test_one_client_holds_its_share_and_the_rest_go_to_the_overflow_then_are_refused() -> None:
    gate, _ = door()
    tenants = [Socket() for _ in range(5)]
    places = [gate.admit(tenant) for tenant in tenants[:4]]
    assert places == [Place.SLOT, Place.SLOT, Place.OVERFLOW, Place.OVERFLOW]
    for tenant in tenants[2:4]:
        gate.heard(tenant)
    assert gate.admit(tenants[4]) is Place.REFUSED, "every overflow connection has sent its request"
    assert not any(tenant.displaced for tenant in tenants)


def test_a_full_overflow_of_idle_sockets_gives_way_to_a_newcomer_oldest_first() -> None:
    gate, _ = door()
    idle = [Socket(peer=f"10.0.0.{i}") for i in range(5)]
    assert [gate.admit(tenant) for tenant in idle] == [Place.SLOT] * 3 + [Place.OVERFLOW] * 2
    asking = Socket(peer="10.0.0.7")
    assert gate.admit(asking) is Place.OVERFLOW, "within their grace, the idle slots are kept"
    assert idle[3].displaced and idle[3].place is Place.REFUSED and not idle[4].displaced
    gate.heard(asking)
    assert gate.admit(Socket(peer="10.0.0.8")) is Place.OVERFLOW and idle[4].displaced
    assert asking in gate.overflow and not asking.displaced, "one that sent its request head is never displaced"
    assert gate.authenticated(asking) and asking.place is Place.SLOT, "a slot is reserved for it"
    assert asking not in gate.overflow and asking not in gate.unheard


def test_unauthenticated_clients_never_take_the_slots_reserved_for_authenticated_ones() -> None:
    gate, _ = door()
    places = [gate.admit(Socket(peer=f"10.0.0.{i}")) for i in range(4)]
    assert places == [Place.SLOT, Place.SLOT, Place.SLOT, Place.OVERFLOW]
    assert gate.admit(Socket(peer="10.0.0.9", standing=Standing.AUTHENTICATED)) is Place.SLOT


def test_without_authentication_every_slot_is_open_to_anyone() -> None:
    gate, _ = door(authenticates=False)
    places = [gate.admit(Socket(peer=f"10.0.0.{i}")) for i in range(5)]
    assert places == [Place.SLOT] * 4 + [Place.OVERFLOW]


def test_a_newcomer_displaces_the_oldest_fresh_connection_past_its_grace_never_a_proven_one() -> None:
    gate, clock = door(authenticates=False, limits=ListenerLimits(max_connections=2, max_connections_per_peer=8))
    proven, idle = Socket(), Socket()
    assert gate.admit(proven) is Place.SLOT and gate.admit(idle) is Place.SLOT
    gate.proven(proven)
    assert gate.admit(Socket()) is Place.OVERFLOW, "within its grace a fresh connection keeps its slot"
    clock.now += FRESH_GRACE_S + 0.1
    newcomer = Socket()
    assert gate.admit(newcomer) is Place.SLOT
    assert idle.displaced and not proven.displaced
    assert idle.place is Place.REFUSED and gate.served == {proven, newcomer}


def test_a_client_at_its_own_limit_displaces_only_its_own_fresh_connections() -> None:
    limits = ListenerLimits(max_connections=8, max_connections_per_peer=2)
    gate, clock = door(authenticates=False, limits=limits)
    other = Socket(peer="10.0.0.2")
    mine = [Socket(), Socket()]
    for tenant in (other, *mine):
        assert gate.admit(tenant) is Place.SLOT
    clock.now += FRESH_GRACE_S + 0.1
    assert gate.admit(Socket()) is Place.SLOT
    assert mine[0].displaced and not other.displaced


def test_an_overflow_connection_that_authenticates_is_served_when_a_slot_is_free() -> None:
    gate, _ = door()
    for i in range(3):
        gate.admit(Socket(peer=f"10.0.0.{i}"))
    late = Socket(peer="10.0.0.7")
    assert gate.admit(late) is Place.OVERFLOW
    assert gate.authenticated(late) and late.place is Place.SLOT and late.standing is Standing.AUTHENTICATED
    assert gate.admit(Socket(peer="10.0.0.8", standing=Standing.AUTHENTICATED)) is Place.OVERFLOW, "every slot held"


def test_released_places_are_free_again_and_the_counts_return_to_zero() -> None:
    gate, _ = door()
    tenants = [Socket(), Socket(), Socket()]
    for tenant in tenants:
        gate.admit(tenant)
    gate.authenticated(tenants[0])
    for tenant in tenants:
        gate.release(tenant)
    assert not gate.served and not gate.overflow and not gate.fresh and not gate.unauthenticated_by_peer


def test_the_bytes_held_are_counted_over_the_listener() -> None:
    gate, _ = door(limits=ListenerLimits(max_buffered_bytes=100))
    gate.hold(80)
    assert not gate.over_buffered
    gate.hold(30)
    assert gate.over_buffered
    gate.hold(-30)
    assert not gate.over_buffered


@pytest.mark.parametrize("rate", [2.0, 10.0])
def test_a_token_bucket_holds_one_seconds_worth_and_says_how_long_to_wait(rate: float) -> None:
    clock = Clock()
    bucket = TokenBucket(rate, clock)
    assert all(bucket.wait() == 0.0 for _ in range(int(rate)))
    wait = bucket.wait()
    assert wait == pytest.approx(1.0 / rate)
    clock.now += wait
    assert bucket.wait() == 0.0


def test_a_rate_of_zero_never_waits() -> None:
    bucket = TokenBucket(0.0, Clock())
    assert all(bucket.wait() == 0.0 for _ in range(1000))
