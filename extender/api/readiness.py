"""`/readyz`: whether this process can do its work yet, and if not, why, in JSON.

A process is ready once every watched kind has been listed into its model. A process whose loops must
take part in the leader election (`tfjob-extender loops`) is ready only once the API server has also
answered whether it leads: the body says `leader` or `standby`. Before that the answer is a 503 whose
`reason` names the kinds not listed yet — with why their last attempt failed when the informers know it
(an RBAC refusal says which permission is missing) — or the lease not answered yet, with the error of
its last attempt. Where the native gangs' controller runs, the body also says whether native gangs are
given here and why (`nativeGangs`); readiness never waits for them. The command line fills `Probes` in
once the informers and the lease exist; a model served from a file has neither and is ready once loaded.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from extender.loops.leadership import LeaseStatus
from extender.state.kinds import BY_KIND
from extender.state.store import ClusterState

HEALTHY = {"status": "ok"}
"""The body of `/healthz`: the process answers."""


@dataclass
class Probes:
    """What `/readyz` weighs beyond the model's sync."""

    informer_problems: Callable[[], Mapping[str, str]] = field(default=lambda: {})
    """Kind → why its last list or watch failed, for the kinds not listed since."""
    lease: Callable[[], LeaseStatus] | None = None
    """Where this process stands in the leader election, when its loops take part in one."""
    needs_lease: bool = False
    """Ready only once the lease has been answered (a process that runs only loops)."""
    native_gangs: Callable[[], Mapping[str, Any]] | None = None
    """Whether native gangs are given here and why (when this process runs their controller); shown, never
    waited for."""


def readiness(state: ClusterState, probes: Probes) -> tuple[bool, dict[str, Any]]:
    """(ready, the JSON body of `/readyz`)."""
    synced = state.synced_kinds()
    body: dict[str, Any] = {"ready": False, "synced": {kind.value: kind in synced for kind in BY_KIND}}
    problems = dict(probes.informer_problems())
    reasons = []
    waiting = [kind.value for kind in BY_KIND if kind not in synced]
    if waiting:
        why = "; ".join(f"{kind}: {problems[kind]}" for kind in waiting if kind in problems)
        reasons.append(f"not listed yet: {', '.join(waiting)}" + (f" ({why})" if why else ""))
    if problems:
        body["problems"] = problems
    lease = probes.lease() if probes.lease is not None else None
    if lease is not None:
        body["lease"] = {"name": lease.lease, "identity": lease.identity, "answered": lease.answered}
        if lease.error:
            body["lease"]["error"] = lease.error
        if lease.answered:
            body["role"] = lease.role
    if probes.needs_lease and (lease is None or not lease.answered):
        name = lease.lease if lease is not None else "the lease"
        failed = f": {lease.error}" if lease is not None and lease.error else ""
        reasons.append(f"{name} not answered yet (leader or standby unknown){failed}")
    if probes.native_gangs is not None:
        body["nativeGangs"] = dict(probes.native_gangs())
    if reasons:
        body["reason"] = "; ".join(reasons)
    body["ready"] = not reasons
    return body["ready"], body
