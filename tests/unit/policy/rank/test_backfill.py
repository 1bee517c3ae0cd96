"""Backfill around a starving gang: it holds only the room its minimum needs, on the nodes that clear
soonest, and everything else may start; only the highest-ranked starving gang holds."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from extender.cli.args import parse_args, settings_from
from extender.policy.core.resources import CPU, GPU, Resources
from extender.policy.core.settings import PolicySettings
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.gang.state import gang_state
from extender.policy.rank.backfill import holding_gangs, reserved_room
from extender.policy.rank.queue import queue_of
from extender.policy.rank.ranking import rank_gangs
from tests.builders import Obj, make_node, make_pod, make_podgroup
from tests.unit.policy.loop import Loop

CREATED = "2026-03-01T10:00:00Z"
OLD = "2026-03-01T09:00:00Z"
NOW = datetime.fromisoformat(CREATED).timestamp() + 30
"""Half a minute after the fresh gangs were created, an hour and a half after the old one."""
SETTINGS = replace(PolicySettings(), starvation_limit_s=600.0, starving_reservations=1)
"""The highest-ranked starving gang holds room (as by default)."""


def gang(name: str, *, pods: int, cpu: str = "1", gpu: int = 0, priority: int = 0, created: str = CREATED) -> list[Obj]:
    members = [make_pod(f"{name}-{i}", group=name, cpu=cpu, gpu=gpu, priority=priority) for i in range(pods)]
    group = make_podgroup(name, min_member=pods)
    group["metadata"]["creationTimestamp"] = created
    return [*members, group]


def busy(name: str, node: str, *, cpu: str, gpu: int = 0) -> Obj:
    return make_pod(name, cpu=cpu, gpu=gpu, node=node, phase="Running", scheduler="default-scheduler")


def cpu_cluster() -> list[Obj]:
    """Three 4-CPU nodes; node-0 and node-1 run one 3-CPU pod each, node-2 is empty. The starving gang
    `old` (two pods of 3 CPU) fits nowhere now: it holds 3 CPU on node-2 (no job to wait for) and 3 CPU
    on node-0 (one job to wait for; node-1 ties and loses on its name)."""
    return [
        *(make_node(f"node-{i}", cpu="4", memory="64Gi") for i in range(3)),
        busy("busy-0", "node-0", cpu="3"),
        busy("busy-1", "node-1", cpu="3"),
        *gang("old", pods=2, cpu="3", created=OLD),
    ]


def test_the_starving_gang_holds_its_minimum_on_the_nodes_that_clear_soonest() -> None:
    loop = Loop(*cpu_cluster(), settings=SETTINGS, now=NOW)
    state = gang_state(loop.snapshot, "default/old")
    assert reserved_room(loop.snapshot, state, {}) == {
        "node-2": Resources({CPU: 3000, "memory": 2**30, "pods": 1}),
        "node-0": Resources({CPU: 3000, "memory": 2**30, "pods": 1}),
    }


def test_of_nodes_running_one_job_the_least_free_is_held_first() -> None:
    """Its room is occupied until the handover, so nothing sits idle meanwhile."""
    objects = [
        *(make_node(f"node-{i}", cpu="4", memory="64Gi") for i in range(2)),
        busy("busy-0", "node-0", cpu="2"),
        busy("busy-1", "node-1", cpu="3"),
        *gang("old", pods=1, cpu="3", created=OLD),
    ]
    snapshot = Loop(*objects, settings=SETTINGS, now=NOW).snapshot
    assert set(reserved_room(snapshot, gang_state(snapshot, "default/old"), {})) == {"node-1"}


def test_a_younger_gang_starts_outside_the_held_room() -> None:
    loop = Loop(*cpu_cluster(), *gang("new", pods=1, cpu="1"), settings=SETTINGS, now=NOW)
    decision = loop.filter("new-0")
    assert decision.outcome == "planned", decision.summary
    assert decision.feasible == ("node-1",)


def test_a_gang_that_arrived_after_the_holder_began_to_starve_and_fits_only_in_the_held_room_yields() -> None:
    loop = Loop(*cpu_cluster(), *gang("new", pods=1, cpu="2"), settings=SETTINGS, now=NOW)
    decision = loop.filter("new-0")
    assert decision.outcome == "yielding", decision.summary
    assert "capacity is held for starving gang default/old" in decision.summary
    assert "on node-2" in decision.summary
    assert loop.snapshot.reservations == {}


def test_a_gang_that_has_starved_itself_is_not_kept_out_of_the_held_room() -> None:
    loop = Loop(
        *cpu_cluster(), *gang("later", pods=2, cpu="2", created="2026-03-01T09:05:00Z"), settings=SETTINGS, now=NOW
    )
    decision = loop.filter("later-0")
    assert decision.outcome == "planned", decision.summary
    assert decision.feasible == ("node-2",)


def test_held_room_that_only_steers_lets_a_gang_that_fits_nowhere_else_start_in_it() -> None:
    steering = replace(SETTINGS, starving_hold="steer")
    loop = Loop(*cpu_cluster(), *gang("new", pods=1, cpu="2"), settings=steering, now=NOW)
    decision = loop.filter("new-0")
    assert decision.outcome == "planned", decision.summary
    assert decision.feasible == ("node-2",)


def test_held_room_that_blocks_keeps_out_a_gang_that_has_starved_itself() -> None:
    blocking = replace(SETTINGS, starving_hold="block")
    loop = Loop(
        *cpu_cluster(), *gang("later", pods=2, cpu="2", created="2026-03-01T09:05:00Z"), settings=blocking, now=NOW
    )
    decision = loop.filter("later-0")
    assert decision.outcome == "yielding", decision.summary
    assert "capacity is held for starving gang default/old" in decision.summary


def test_without_backfill_the_starving_gang_holds_all_capacity() -> None:
    settings = replace(SETTINGS, starving_backfill=False)
    loop = Loop(*cpu_cluster(), *gang("new", pods=1, cpu="1"), settings=settings, now=NOW)
    decision = loop.filter("new-0")
    assert decision.outcome == "yielding", decision.summary
    assert "capacity is held for starving gang default/old" in decision.summary


def test_room_is_held_per_resource() -> None:
    """The starving gang needs 4 GPUs; node-0 (chosen by name) has only 2 free. A CPU-only gang may still
    use node-0's spare CPU; a GPU gang goes to node-1."""
    objects = [
        *(make_node(f"node-{i}", cpu="8", memory="64Gi", gpu=4) for i in range(2)),
        busy("busy-0", "node-0", cpu="1", gpu=2),
        busy("busy-1", "node-1", cpu="1", gpu=2),
        *gang("old", pods=1, cpu="1", gpu=4, created=OLD),
    ]
    snapshot = Loop(*objects, settings=SETTINGS, now=NOW).snapshot
    held = reserved_room(snapshot, gang_state(snapshot, "default/old"), {})
    assert {node: room.get(GPU) for node, room in held.items()} == {"node-0": 4}
    cpu_only = Loop(*objects, *gang("cpu", pods=1, cpu="6"), settings=SETTINGS, now=NOW)
    assert cpu_only.filter("cpu-0").outcome == "planned"
    gpu = Loop(*objects, *gang("gpu", pods=1, cpu="1", gpu=1), settings=SETTINGS, now=NOW)
    decision = gpu.filter("gpu-0")
    assert decision.outcome == "planned", decision.summary
    assert decision.feasible == ("node-1",)


def test_the_highest_ranked_starving_gangs_hold_whatever_ranks_above_them() -> None:
    """A fresh gang of a higher PriorityClass heads the queue; the starving gang still holds (it goes before
    every gang of its own class). Of two starving gangs only the higher-ranked holds, unless more may."""
    objects = [
        *cpu_cluster(),
        *gang("urgent", pods=4, cpu="3", priority=100),
        *gang("later", pods=3, cpu="3", created="2026-03-01T09:05:00Z"),
    ]
    loop = Loop(*objects, settings=SETTINGS, now=NOW)
    ranks = rank_gangs(loop.snapshot, NOW, SETTINGS)
    assert [rank.subject for rank in ranks] == ["default/urgent", "default/old", "default/later"]
    assert holders(loop.snapshot, SETTINGS) == frozenset({"default/old"})
    two = replace(SETTINGS, starving_reservations=2)
    assert holders(loop.snapshot, two) == frozenset({"default/old", "default/later"})


def holders(snapshot: ClusterSnapshot, settings: PolicySettings) -> frozenset[str]:
    queue = queue_of(snapshot, settings)
    return holding_gangs(queue, queue.starving(NOW, settings), settings).subjects


def test_both_deciding_processes_take_what_held_room_keeps_out_from_their_command_line() -> None:
    for command in ("serve", "loops"):
        assert settings_from(parse_args([command])).policy.starving_hold == "newcomers"
        assert settings_from(parse_args([command, "--starving-hold", "block"])).policy.starving_hold == "block"
