"""The real informer against a scripted API server on 127.0.0.1: list, watch, 410, 404, reconnects."""

from __future__ import annotations

from functools import partial

from extender.k8s.informer import Informers
from extender.state.kinds import Kind
from tests.unit.k8s.fake_api import NODES, TFJOBS, FakeApiServer, Recorder, events, listing, node, run, wait_for


def test_list_pages_then_watch_events_in_order(recorder: Recorder) -> None:
    watches = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal watches
        if "watch" not in query:
            if "continue" not in query:
                return 200, listing([node("a", "1"), node("b", "2")], "", token="page2")
            return 200, listing([node("c", "3")], "10")
        watches += 1
        if watches == 1:
            assert query["resourceVersion"] == ["10"]
            return 200, events(
                {"type": "ADDED", "object": node("d", "11")},
                {"type": "MODIFIED", "object": node("a", "12")},
                {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "20"}}},
                {"type": "DELETED", "object": node("b", "21")},
            )
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("DELETED", Kind.NODE, "b") in recorder.snapshot())
            wait_for(lambda: len([r for r in server.requests if "watch" in r[1]]) >= 2)
            # The first list feeds the model page by page, one object at a time.
            assert recorder.snapshot()[:7] == [
                ("ADDED", Kind.NODE, "a"),
                ("ADDED", Kind.NODE, "b"),
                ("ADDED", Kind.NODE, "c"),
                ("synced", Kind.NODE, None),
                ("ADDED", Kind.NODE, "d"),
                ("MODIFIED", Kind.NODE, "a"),
                ("DELETED", Kind.NODE, "b"),
            ]
            second_watch = [q for _, q in server.requests if "watch" in q][1]
            assert second_watch["resourceVersion"] == ["21"], "a normal watch end resumes from the last version"


def test_an_expired_resource_version_relists_instead_of_resuming(recorder: Recorder) -> None:
    lists = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal lists
        if "watch" not in query:
            lists += 1
            return 200, listing([node(f"gen{lists}", str(lists * 100))], str(lists * 100))
        if query["resourceVersion"] == ["100"]:
            return 200, events({"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}})
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("replace", Kind.NODE, ["gen2"]) in recorder.snapshot())
            wait_for(lambda: any(q.get("resourceVersion") == ["200"] for _, q in server.requests if "watch" in q))


def test_an_http_410_on_watch_also_relists(recorder: Recorder) -> None:
    lists = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal lists
        if "watch" not in query:
            lists += 1
            return 200, listing([node(f"gen{lists}", "1")], str(lists))
        return (410, [b"{}"]) if query["resourceVersion"] == ["1"] else (200, [])

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("replace", Kind.NODE, ["gen2"]) in recorder.snapshot())


def test_a_failing_server_is_retried_with_backoff(recorder: Recorder) -> None:
    attempts = 0

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        nonlocal attempts
        if "watch" not in query:
            attempts += 1
            if attempts < 3:
                return 500, [b'{"message": "etcd unavailable"}']
            return 200, listing([node("a", "1")], "1")
        return 200, []

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (NODES,)):
            wait_for(lambda: ("synced", Kind.NODE, None) in recorder.snapshot())
            assert attempts == 3
            calls = recorder.snapshot()
            assert calls.index(("unsynced", Kind.NODE, None)) < calls.index(("synced", Kind.NODE, None))


def test_an_absent_optional_kind_counts_as_synced_and_empty(recorder: Recorder) -> None:
    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        return 404, [b'{"kind": "Status", "code": 404}']

    with FakeApiServer(script) as server:
        for _ in run(server, recorder, (TFJOBS,)):
            wait_for(lambda: ("synced", Kind.TFJOB, None) in recorder.snapshot())
            assert recorder.snapshot()[0] == ("replace", Kind.TFJOB, [])
            wait_for(lambda: len(server.requests) >= 2)


def test_a_forbidden_list_stays_unsynced_and_the_informer_says_which_permission_is_missing(
    recorder: Recorder,
) -> None:
    allowed = False

    def script(path: str, query: dict[str, list[str]]) -> tuple[int, list[bytes]]:
        if not allowed:
            return 403, [b'{"kind": "Status", "code": 403, "reason": "Forbidden"}']
        return (200, listing([node("a", "1")], "1")) if "watch" not in query else (200, [])

    with FakeApiServer(script) as server:
        for informers in run(server, recorder, (NODES,)):
            wait_for(partial(has_problem, informers))
            problem = informers.problems()[Kind.NODE.value]
            assert "forbidden (HTTP 403)" in problem and "list and watch nodes" in problem and "RBAC" in problem
            assert ("synced", Kind.NODE, None) not in recorder.snapshot()
            allowed = True
            wait_for(lambda: ("synced", Kind.NODE, None) in recorder.snapshot())
            wait_for(partial(has_no_problem, informers))


def has_problem(informers: Informers) -> bool:
    return Kind.NODE.value in informers.problems()


def has_no_problem(informers: Informers) -> bool:
    return not informers.problems()
