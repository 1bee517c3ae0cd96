"""The simulator and the service decide the same for the same snapshot.

The simulator's "ours" is driven until gangs run and others wait, two running jobs finish (freeing room
nobody has planned yet), and the model is dumped as the
service's `/debug/state` would dump it, loaded into a fresh service (offline mode), and every pending pod
is then put to both: the simulator's in-process verbs and the service's `filter` + `prioritize` replies
(`verbs.answer`: what the verb listener sends for `POST /filter` and `POST /prioritize`, bytes and all).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from extender.api.app import make_service
from extender.api.verbs import Service, answer
from extender.config import Settings
from extender.sim.cluster import EPOCH
from extender.sim.engine import Simulation
from extender.sim.policies import Ours
from extender.sim.workload import kod2
from extender.state.kinds import Kind
from extender.state.manifests import dump_state
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState


def post(service: Service, verb: str, payload: Any) -> Any:
    return json.loads(answer(service, verb, json.dumps(payload).encode()))


def test_simulator_and_service_make_the_same_decisions(tmp_path: Path) -> None:
    policy = Ours()
    simulation = Simulation(kod2(1), policy)
    cluster = simulation.cluster
    now = 0.0
    for spec in kod2(1).jobs:
        now = spec.arrival_s
        policy.submit(spec, now)
        policy.step(now)
    running = [job for job in cluster.jobs.values() if any(pod.node for pod in job.pods.values())]
    for job in running[:2]:
        cluster.finish_job(job.spec.name)
    now += 30.0
    assert cluster.model is not None
    pending = sorted(cluster.pending_pods(), key=lambda pod: (pod.created, pod.key))
    assert pending, "the scenario should leave pods waiting"
    dump = tmp_path / "state.json"
    dump.write_text(json.dumps(dump_state(cluster.model.snapshot())))
    served = ClusterState()
    load_snapshot_file(served, dump)
    service = make_service(Settings(), served, lambda: EPOCH + now)
    decided = {"placed": 0, "refused": 0}
    for pod in pending:
        candidates = [name for name in cluster.nodes if pod.requests.fits_in(cluster.free(name))]
        if not candidates:
            continue
        body = {"Pod": cluster.pod_object(pod), "Nodes": None, "NodeNames": candidates}
        reply = post(service, "filter", body)
        simulated = policy.extender.filter(pod, candidates, now)
        assert sorted(reply["NodeNames"] or []) == sorted(simulated), pod.key
        decided["placed" if simulated else "refused"] += 1
        if simulated:
            body["NodeNames"] = simulated
            scores = {entry["Host"]: entry["Score"] for entry in post(service, "prioritize", body)}
            assert scores == policy.extender.prioritize(pod, simulated), pod.key
            cluster.bind(pod.key, simulated[0])
            served.apply(Kind.POD, "MODIFIED", cluster.pod_object(pod))
    assert decided["placed"] >= 3 and decided["refused"] >= 1, decided
