"""What both listeners' read apps answer beyond their routes: HEAD on every read route (the probes first),
`{"error": ...}` for an unknown path, a wrong method and an internal error, and `/openapi.json` only when
asked for."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from extender.api.app import make_service
from extender.api.observe import create_observe_app
from extender.api.read_routes import read_route
from extender.api.verbs import Service
from extender.config import Settings
from extender.state.store import ClusterState


def failing_router() -> APIRouter:
    router = APIRouter()

    @read_route(router, "/debug/failing")
    async def failing() -> None:
        raise RuntimeError("a bug")

    return router


@pytest.fixture
def read_client(service: Service) -> Iterator[TestClient]:
    """A client of the observe listener's app with its debug routes and a route that fails."""
    app = create_observe_app(service, [failing_router()], debug_routes=True)
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


@pytest.mark.parametrize(
    "path", ["/healthz", "/readyz", "/metrics", "/debug/gangs/default/mnist", "/ui", "/debug/state"]
)
def test_head_answers_what_get_answers_without_the_body(read_client: TestClient, path: str) -> None:
    got = read_client.get(path)
    head = read_client.head(path)
    assert (head.status_code, head.headers["content-type"]) == (got.status_code, got.headers["content-type"])
    assert got.content
    assert head.content == b""


def test_head_on_readyz_says_not_ready_too() -> None:
    service = make_service(Settings(), ClusterState(), lambda: 0.0)
    with TestClient(create_observe_app(service)) as client:
        assert client.head("/readyz").status_code == 503
        assert client.head("/healthz").status_code == 200


def test_an_unknown_path_is_a_json_404(read_client: TestClient) -> None:
    answer = read_client.get("/debug/nothing-here")
    assert answer.status_code == 404
    assert answer.json() == {"error": "GET /debug/nothing-here: Not Found"}


@pytest.mark.parametrize("path", ["/healthz", "/debug/state", "/debug/nothing-here"])
def test_a_write_is_a_json_405_that_says_what_is_allowed(service: Service, path: str) -> None:
    with TestClient(create_observe_app(service, debug_routes=True)) as client:
        answer = client.put(path)
    assert answer.status_code == 405
    assert answer.json() == {"error": f"PUT {path}: the observe listener is read-only (GET only)"}
    assert answer.headers["allow"] == "GET, HEAD"


def test_an_internal_error_is_a_json_500_that_names_the_exception_only(read_client: TestClient) -> None:
    answer = read_client.get("/debug/failing")
    assert answer.status_code == 500
    assert answer.json() == {"error": "GET /debug/failing: internal error (RuntimeError)"}


def test_the_schema_is_not_served_unless_asked_for(state: ClusterState) -> None:
    plain = make_service(Settings(), state, lambda: 0.0)
    asked = make_service(Settings(observe_openapi=True), state, lambda: 0.0)
    for app in (create_observe_app(plain, debug_routes=True), create_observe_app(asked)):
        with TestClient(app) as client:
            answer = client.get("/openapi.json")
        assert answer.status_code == 404
        assert "error" in answer.json()
    with TestClient(create_observe_app(asked, debug_routes=True)) as client:
        schema = client.get("/openapi.json").json()
    assert {"/debug/queue", "/debug/explain/{namespace}/{name}", "/metrics"} <= set(schema["paths"])
    questions = {"/debug/what-if": {"post"}}
    assert all(set(operations) == questions.get(path, {"get"}) for path, operations in schema["paths"].items())
