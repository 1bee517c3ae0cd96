"""A paginated list fetched one page ahead: tokens, order, errors and an early stop."""

from __future__ import annotations

import threading
import time

import orjson
import pytest

from extender.k8s.pages import continue_token, prefetched_pages


def page(token: str, names: list[str]) -> bytes:
    metadata = {"resourceVersion": "7", **({"continue": token} if token else {}), "remainingItemCount": 3}
    items = [{"metadata": {"name": name, "labels": {"continue": "x"}}} for name in names]
    return orjson.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": metadata, "items": items})


@pytest.mark.parametrize(
    ("body", "token"),
    [
        (page("abc", ["a"]), "abc"),
        (page("", ["a"]), ""),
        (orjson.dumps({"items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "late"}}), "late"),
        (orjson.dumps({"metadata": {"continue": "t", "odd": {"nested": 1}}, "items": []}), "t"),
        (b'{"kind":"PodList","items":[]}', ""),
    ],
)
def test_the_continue_token_is_read_from_the_list_metadata_only(body: bytes, token: str) -> None:
    assert continue_token(body) == token


def test_pages_come_in_order_until_one_has_no_token() -> None:
    asked: list[str] = []
    pages = {"": page("p2", ["a", "b"]), "p2": page("p3", ["c"]), "p3": page("", ["d"])}

    def fetch(token: str) -> bytes:
        asked.append(token)
        return pages[token]

    bodies = list(prefetched_pages(fetch))
    assert [[item["metadata"]["name"] for item in orjson.loads(b)["items"]] for b in bodies] == [
        ["a", "b"],
        ["c"],
        ["d"],
    ]
    assert asked == ["", "p2", "p3"]


def test_a_fetch_error_reaches_the_caller_after_the_pages_before_it() -> None:
    def fetch(token: str) -> bytes:
        if token == "p2":
            raise RuntimeError("410 Gone")
        return page("p2", ["a"])

    received = []
    with pytest.raises(RuntimeError, match="410 Gone"):
        for body in prefetched_pages(fetch):
            received.append(body)
    assert len(received) == 1


def test_a_caller_that_stops_early_stops_the_fetcher() -> None:
    fetched = 0

    def endless(token: str) -> bytes:
        nonlocal fetched
        fetched += 1
        return page(f"p{fetched}", ["a"])

    pages = prefetched_pages(endless)
    next(pages)
    pages.close()
    time.sleep(0.3)
    settled = fetched
    time.sleep(0.3)
    assert fetched == settled <= 4, "no page is fetched once the caller has gone"
    assert not any(thread.name == "list-pages" for thread in threading.enumerate())
