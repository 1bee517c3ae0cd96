"""What the verb listener serves: kube-scheduler's three verbs and the two probes, nothing else.

`POST /filter`, `/prioritize` and `/preempt` are answered in place when their request is complete:
`verbs.answer` is pure CPU and the reply goes out in one write with no task in between. A gang member the
model has not seen yet is answered later, once the watch has delivered it (`answer_when_seen`, on the
event loop). `GET` or `HEAD` `/healthz` and `/readyz` are answered in place from the model's readiness
(`extender.api.readiness`), as an observe listener answers them. Anything else is a JSON 404 — the debug
routes, the page, explain and the metrics live on the observe listener, behind its own rules — and a
wrong method a JSON 405.
"""

from __future__ import annotations

import asyncio
import time

import orjson

from extender.api import verbs
from extender.api.auth import OPEN_PATHS
from extender.api.edge.encoding import VERB_PATHS, Reply, Request, json_error
from extender.api.edge.responder import Outlet
from extender.api.readiness import HEALTHY, readiness

READ_METHODS = frozenset({b"GET", b"HEAD"})


class VerbResponder:
    """The verb listener's requests over one `Service` (see the module's text)."""

    open_paths = OPEN_PATHS

    def __init__(self, service: verbs.Service) -> None:
        self.service = service

    def answer_now(self, request: Request) -> Reply | None:
        path = request.path()
        verb = VERB_PATHS.get(path)
        if verb is not None:
            if request.method != b"POST":
                message = f"{request.method.decode('latin-1')} /{verb}: the extender verbs take POST only"
                return json_error(405, message, headers=((b"allow", b"POST"),))
            try:
                return Reply(200, verbs.answer(self.service, verb, request.body, final=False))
            except verbs.PodNotSeenYet:
                return None
        if path in OPEN_PATHS:
            if request.method not in READ_METHODS:
                message = f"{request.method.decode('latin-1')} {path.decode()}: the probes take GET or HEAD"
                return json_error(405, message, headers=((b"allow", b"GET, HEAD"),))
            return self._probe(path)
        shown = path[:200].decode("latin-1")
        return json_error(404, f"{shown}: the verb listener serves /filter, /prioritize, /preempt, /healthz, /readyz")

    def _probe(self, path: bytes) -> Reply:
        if path == b"/healthz":
            return Reply(200, orjson.dumps(HEALTHY))
        ready, body = readiness(self.service.state, self.service.probes)
        return Reply(200 if ready else 503, orjson.dumps(body))

    async def answer_later(self, request: Request, outlet: Outlet) -> None:
        verb = VERB_PATHS[request.path()]
        outlet.write_whole(Reply(200, await answer_when_seen(self.service, verb, request.body)))


async def answer_when_seen(service: verbs.Service, verb: str, body: bytes) -> bytes:
    """The reply, giving the watch up to `model_catch_up_s` to deliver a gang member kube-scheduler asks about
    first, or the members of a gang it gates (it watches the same API server, so it can be a moment ahead);
    the event loop keeps serving meanwhile."""
    settings = service.settings
    deadline = time.monotonic() + settings.model_catch_up_s
    while True:
        try:
            return verbs.answer(service, verb, body, final=time.monotonic() >= deadline)
        except verbs.PodNotSeenYet:
            await asyncio.sleep(settings.model_catch_up_poll_s)
