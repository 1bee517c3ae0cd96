"""Lease-based leader election against an in-memory API server that enforces resourceVersions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from extender.k8s import lease as lease_module
from extender.k8s.client import ApiCallError
from extender.k8s.lease import KubeLease

PATH = "/apis/coordination.k8s.io/v1/namespaces/ns/leases/scaler"


class FakeLeases:
    """One Lease object: GET, POST (create), PUT (replace, resourceVersion must match)."""

    def __init__(self) -> None:
        self.obj: dict[str, Any] | None = None
        self.version = 0
        self.stale_read: dict[str, Any] | None = None
        """Served once by the next GET instead of the current object."""

    def __call__(self, api: object, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        if method == "GET":
            if self.stale_read is not None:
                stale, self.stale_read = self.stale_read, None
                return stale
            if self.obj is None:
                raise ApiCallError(404, "not found")
            return copy.deepcopy(self.obj)
        if method == "POST":
            if self.obj is not None:
                raise ApiCallError(409, "exists")
            return self._store(body)
        assert method == "PUT" and path == PATH
        assert self.obj is not None
        if body["metadata"]["resourceVersion"] != self.obj["metadata"]["resourceVersion"]:
            raise ApiCallError(409, "conflict")
        return self._store(body)

    def _store(self, body: dict[str, Any]) -> dict[str, Any]:
        self.version += 1
        self.obj = copy.deepcopy(body)
        self.obj.setdefault("metadata", {})["resourceVersion"] = str(self.version)
        return copy.deepcopy(self.obj)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeLeases:
    fake = FakeLeases()
    monkeypatch.setattr(lease_module, "api_call", fake)
    return fake


def elector(identity: str, clock: Clock, *, retry_period_s: float = 0.0) -> KubeLease:
    """An elector that asks the API server on every call unless given a retry period."""
    return KubeLease(
        object(),  # type: ignore[arg-type]
        namespace="ns",
        name="scaler",
        identity=identity,
        duration_s=10,
        retry_period_s=retry_period_s,
        clock=clock,
    )


def test_one_holder_renews_and_the_other_waits_a_whole_duration_after_it_stops(server: FakeLeases) -> None:
    clock = Clock()
    a, b = elector("a", clock), elector("b", clock)
    assert a.holds() and not b.holds()
    for _ in range(5):
        clock.now += 3
        assert a.holds() and not b.holds(), "renewals keep the lease"
    clock.now += 9  # a stops renewing
    assert not b.holds(), "not yet a whole duration since b saw the record change"
    clock.now += 2
    assert b.holds()
    assert server.obj is not None and server.obj["spec"]["holderIdentity"] == "b"
    assert server.obj["spec"]["leaseTransitions"] == 1
    assert not a.holds(), "the old holder, come back, is a follower"


def test_a_released_lease_is_taken_at_once(server: FakeLeases) -> None:
    clock = Clock()
    a, b = elector("a", clock), elector("b", clock)
    assert a.holds() and not b.holds()
    a.release()
    assert b.holds()


def test_of_two_instances_racing_for_an_expired_lease_one_wins(server: FakeLeases) -> None:
    clock = Clock()
    a, b, c = elector("a", clock), elector("b", clock), elector("c", clock)
    assert a.holds() and not b.holds() and not c.holds()
    clock.now += 11
    read_before_b_wrote = copy.deepcopy(server.obj)
    assert b.holds()
    server.stale_read = read_before_b_wrote  # c read the Lease before b's write landed
    assert not c.holds(), "its write carries the old resourceVersion and conflicts"
    assert server.obj is not None and server.obj["spec"]["holderIdentity"] == "b"


class CountingLeases(FakeLeases):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.failing = False

    def __call__(self, api: object, method: str, path: str, body: Any = None, content_type: str = "") -> Any:
        self.calls += 1
        if self.failing:
            raise OSError("connection refused")
        return super().__call__(api, method, path, body, content_type)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> CountingLeases:
    fake = CountingLeases()
    monkeypatch.setattr(lease_module, "api_call", fake)
    return fake


def test_asking_many_times_a_second_calls_the_api_server_once_per_retry_period(counting: CountingLeases) -> None:
    clock = Clock()
    a, b = elector("a", clock, retry_period_s=2), elector("b", clock, retry_period_s=2)
    assert a.holds() and not b.holds()
    after_first = counting.calls
    for _ in range(100):
        clock.now += 0.01
        assert a.holds() and not b.holds()
    assert counting.calls == after_first, "answered from the last call within the retry period"
    clock.now += 2
    assert a.holds() and not b.holds()
    assert counting.calls == after_first + 3, "the holder renewed (GET, PUT), the follower looked (GET)"


def test_a_failed_renewal_ends_the_holding_and_a_later_one_restores_it(counting: CountingLeases) -> None:
    clock = Clock()
    a = elector("a", clock, retry_period_s=2)
    assert a.holds()
    counting.failing = True
    clock.now += 2
    assert not a.holds(), "a failed renewal ends the holding at once"
    clock.now += 1
    assert not a.holds(), "and stays ended until the next call"
    counting.failing = False
    clock.now += 1
    assert a.holds(), "its own record is renewed again"


def test_the_retry_period_is_capped_at_a_quarter_of_the_duration(counting: CountingLeases) -> None:
    clock = Clock()
    a = elector("a", clock, retry_period_s=9)
    assert a.holds()
    calls = counting.calls
    clock.now += 2.4
    assert a.holds() and counting.calls == calls
    clock.now += 0.1
    assert a.holds() and counting.calls == calls + 2, "renewed once 2.5 s (10 s / 4) had passed"


def test_the_status_says_whether_the_api_server_answered_and_why_it_did_not(
    server: FakeLeases, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    a, b = elector("a", clock), elector("b", clock)
    assert not a.status().answered and a.status().lease == "ns/scaler"
    assert a.holds() and not b.holds()
    assert (a.status().answered, a.status().role) == (True, "leader")
    assert (b.status().answered, b.status().role, b.status().error) == (True, "standby", None)

    def forbidden(*args: object, **kwargs: object) -> Any:
        raise ApiCallError(403, "GET leases: HTTP 403: forbidden")

    monkeypatch.setattr(lease_module, "api_call", forbidden)
    fresh = elector("c", clock)
    assert not fresh.holds()
    status = fresh.status()
    assert not status.answered and status.error is not None and "403" in status.error
