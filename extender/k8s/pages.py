"""A paginated list fetched one page ahead: while the model takes in one page, the next is on its way.

Listing 100 000 pods takes some 200 pages. Fetching a page is mostly waiting — on the API server, TLS and
the socket, none of which holds the interpreter lock — and taking one in is CPU in this process, so done
one after the other each side idles half the time. A fetcher thread reads each page's body, finds its
`continue` token in the list metadata that precedes the items (decoding the whole body only when it is
not there), and asks for the next page while the caller decodes and applies the current one. At most
`ahead` pages wait; an error while fetching reaches the caller where that page would have; a caller that
stops early (an exception, a closed generator) stops the fetcher after its current request.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Generator

import orjson

METADATA_WITHIN_BYTES = 4096
"""How far into a page the list's own metadata is looked for (it follows `kind` and `apiVersion`)."""
HANDOFF_POLL_S = 0.1
"""How often a fetcher waiting to hand a page over checks whether the caller has gone."""


def continue_token(body: bytes) -> str:
    """The list's `metadata.continue` ("" on the last page). The API server writes a list as kind,
    apiVersion, metadata, items; the metadata object holds only strings and numbers, so it is decoded
    on its own when it comes before any item. Anything else is decoded whole."""
    start = body.find(b'"metadata":{', 0, METADATA_WITHIN_BYTES)
    end = body.find(b"}", start) if start >= 0 and body.find(b'"items"', 0, start) < 0 else -1
    if end >= 0:
        try:
            metadata = orjson.loads(body[start + len(b'"metadata":') : end + 1])
        except orjson.JSONDecodeError:
            metadata = None
        if isinstance(metadata, dict):
            return str(metadata.get("continue") or "")
    document = orjson.loads(body)
    listed = document.get("metadata") if isinstance(document, dict) else None
    return str(listed.get("continue") or "") if isinstance(listed, dict) else ""


def prefetched_pages(fetch: Callable[[str], bytes], *, ahead: int = 1) -> Generator[bytes, None, None]:
    """Every page's body in order; `fetch(token)` returns the page a `continue` token names ("": the
    first)."""
    handoff: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=ahead)
    leaving = threading.Event()

    def hand_over(item: bytes | BaseException | None) -> None:
        while not leaving.is_set():
            try:
                handoff.put(item, timeout=HANDOFF_POLL_S)
                return
            except queue.Full:
                continue

    def run() -> None:
        token = ""
        try:
            while not leaving.is_set():
                body = fetch(token)
                token = continue_token(body)
                hand_over(body)
                if not token:
                    break
            hand_over(None)
        except BaseException as error:
            hand_over(error)

    threading.Thread(target=run, name="list-pages", daemon=True).start()
    try:
        while True:
            item = handoff.get()
            if item is None:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        leaving.set()
