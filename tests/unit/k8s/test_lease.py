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


def elector(identity: str, clock: Clock) -> KubeLease:
    return KubeLease(object(), namespace="ns", name="scaler", identity=identity, duration_s=10, clock=clock)  # type: ignore[arg-type]


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
