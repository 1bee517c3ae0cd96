"""`POST /debug/what-if`: what would happen to a TFJob if it were submitted now, without submitting it.

The body is the TFJob's manifest as JSON (`tfjob-extender explain --what-if FILE` reads YAML or JSON and sends
JSON). The route builds the pods and the PodGroup training-operator would create for it (`state.would_be`),
adds them to a copy of one snapshot of the model — never to the model — and asks the gang planner and the
rank rules (`policy.rank.what_if`). The answer's `verdict` is `now` (with the plan's `nodes` and `plan`),
`wait` (with `shortfall`: each resource its pods ask more of than is free, needed against free, in the words
`describe` uses, and `reason`) or `never` (its `reason`: bigger than the cluster). A body that is not JSON or
not a TFJob the model can read, or one of more than `MAX_WHAT_IF_PODS` pods, is a 400 with an `error`; a job,
PodGroup or pod the model already knows a 409. The observe listener's limits bound it as every other request
(a body over `max_body_bytes`, 64 KiB by default, is refused before the route runs), it is a debug route
behind the same guard as `/debug/explain`, and it is computed in steps like the other documents
(`extender.api.pacing`): it changes nothing, and only takes a POST because it takes a body.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi import APIRouter, Request, Response

from extender.api.pacing import HAND_BACK, Steps
from extender.api.read_routes import json_reply
from extender.api.verbs import Service
from extender.policy.core.resources import Resources, describe, describe_amount
from extender.policy.gang.planner import describe_pods
from extender.policy.rank.what_if import Verdict, WhatIf, what_if
from extender.state.would_be import NotAskable, WouldBe, with_would_be, would_be

WHAT_IF_PATH = "/debug/what-if"
MAX_WHAT_IF_PODS = 5000
"""Most pods a TFJob asked about may have: planning a gang is one step on the event loop."""


def make_what_if_router(service: Service) -> APIRouter:
    router = APIRouter()
    settings = service.settings

    def answer(manifest: Any) -> Steps[tuple[dict[str, Any], int]]:
        snapshot = service.state.snapshot()
        now = service.clock()
        policy = settings.policy
        try:
            would = would_be(
                manifest,
                scheduler_name=policy.scheduler_name,
                priority_classes=snapshot.priority_classes,
                max_pods=MAX_WHAT_IF_PODS,
            )
            yield None
            hypothetical = with_would_be(snapshot, would, policy)
        except NotAskable as error:
            return {"error": str(error)}, 409 if error.known else 400
        yield HAND_BACK
        return render(what_if(hypothetical, would.group.key, policy, now), would), 200

    @router.post(WHAT_IF_PATH)
    async def what_if_route(request: Request) -> Response:
        try:
            manifest = orjson.loads(await request.body())
        except orjson.JSONDecodeError as error:
            return json_reply({"error": f"the body is not a JSON TFJob manifest: {error}"}, 400)
        body, status = await service.pacing.computed(answer(manifest), settings.debug_render_share)
        return json_reply(body, status)

    return router


def render(outcome: WhatIf, would: WouldBe) -> dict[str, Any]:
    """The answer: the verdict, what the job asks, and what the verdict rests on."""
    body: dict[str, Any] = {
        "object": would.job.key,
        "kind": "TFJob",
        "gang": outcome.gang,
        "verdict": outcome.verdict.value,
        "reason": outcome.reason,
        "pods": len(would.pods),
        "asks": describe_pods(would.pods),
        "needed": describe(outcome.needed),
        "free": describe(outcome.free),
        "rank": outcome.rank,
        "waiting": outcome.waiting,
    }
    if outcome.verdict is Verdict.NOW:
        body["nodes"] = list(outcome.nodes)
        body["plan"] = [{"pod": pod, "node": node} for pod, node in outcome.plan]
    else:
        body["shortfall"] = [_shortfall(name, outcome.needed, outcome.free) for name in outcome.short_of]
    if outcome.verdict is Verdict.WAIT:
        body["freeable"] = describe(outcome.freeable)
    return body


def _shortfall(name: str, needed: Resources, free: Resources) -> dict[str, str]:
    return {
        "resource": name,
        "needed": describe_amount(name, needed.get(name)),
        "free": describe_amount(name, free.get(name)),
    }
