"""What the admission webhook's listener serves: `POST /mutate-tfjobs` (`extender.api.admission`) and the probes.

The API server calls the webhook over TLS (the listener's context comes from `extender.k8s.webhook_tls`), one
AdmissionReview a request; each is answered in place, in the callback that read its last byte: the patch is
pure CPU over the TFJob already read. `GET`/`HEAD` `/healthz` answers that the listener runs, `/readyz` whether
the certificate the API server trusts is loaded yet. Anything else is a JSON 404, a wrong method a JSON 405.
"""

from __future__ import annotations

from collections.abc import Callable

import orjson

from extender.api.admission import WEBHOOK_PATH
from extender.api.auth import OPEN_PATHS
from extender.api.edge.encoding import Reply, Request, json_error
from extender.api.edge.responder import Outlet
from extender.api.readiness import HEALTHY

READ_METHODS = frozenset({b"GET", b"HEAD"})


class WebhookResponder:
    """`answer`: an AdmissionReview's body → (status, body); `ready`: whether the trusted certificate is served."""

    open_paths = OPEN_PATHS

    def __init__(self, answer: Callable[[bytes], tuple[int, bytes]], ready: Callable[[], bool]) -> None:
        self.answer = answer
        self.ready = ready

    def answer_now(self, request: Request) -> Reply | None:
        path = request.path()
        if path == WEBHOOK_PATH:
            if request.method != b"POST":
                return json_error(405, f"{WEBHOOK_PATH.decode()} takes POST only", headers=((b"allow", b"POST"),))
            status, body = self.answer(request.body)
            return Reply(status, body)
        if path in OPEN_PATHS:
            if request.method not in READ_METHODS:
                return json_error(405, f"{path.decode()} takes GET or HEAD", headers=((b"allow", b"GET, HEAD"),))
            if path == b"/healthz":
                return Reply(200, orjson.dumps(HEALTHY))
            ready = self.ready()
            return Reply(200 if ready else 503, orjson.dumps({"ready": ready, "certificate": ready}))
        shown = path[:200].decode("latin-1")
        return json_error(404, f"{shown}: the webhook listener serves {WEBHOOK_PATH.decode()}, /healthz, /readyz")

    async def answer_later(self, request: Request, outlet: Outlet) -> None:
        raise AssertionError("every request of the webhook listener is answered in place")
