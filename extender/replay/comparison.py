"""The comparison `tfjob-extender simulate` makes, run on a replayed history over seeds, and what ours would gain.

For each seed 1..N the workload's undeclared checkpoint intervals are drawn as `simulate` draws a trace's
(`with_checkpoints`, the declared ones kept) and every policy runs it through `sim.cli.run_policies` with that
seed (its tie-breaks); each policy's metrics (`sim.report.summary`) are averaged over the seeds. Ours is then
held against the default scheduler and against the best honest baseline by average JCT (as
`benchmarks/quality_matrix.py` picks it: Optimus is reported but left out, it reads the simulator's own throughput
model, an oracle no scheduler has): the ratio ours ÷ theirs of average and p95 JCT, makespan and average wait
(below 1: ours is better). The text reuses `sim.report.table`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from extender.replay.history import History
from extender.sim import cli, report
from extender.sim.engine import RunResult
from extender.sim.workload import Workload, with_checkpoints

HONEST_BASELINES = ("default", "gang-fifo", "kod2", "tiresias")
"""The policies ours is held against for "the best baseline" (Optimus, an oracle, is left out)."""
SHOWN = ("avg_jct_s", "p95_jct_s", "makespan_s", "avg_queue_s", "censored_jobs")
"""The metrics of the per-policy table (`report.COLUMNS` keys)."""
RATIOS = (("avg_jct_s", "avg JCT"), ("p95_jct_s", "p95 JCT"), ("makespan_s", "makespan"), ("avg_queue_s", "avg wait"))
"""The metrics compared as ours ÷ theirs, with their titles."""
MEAN_DECIMALS = 4
"""Decimals a metric averaged over seeds is kept to (the finest any metric has: utilisation shares)."""
RATIO_DECIMALS = 3
"""Decimals a ratio ours ÷ theirs is kept to."""

Runner = Callable[[Workload, Sequence[str], int], list[RunResult]]
"""Runs a workload through the named policies with a seed (`sim.cli.run_policies`)."""


def compare(history: History, seeds: int, runner: Runner = cli.run_policies) -> dict[str, Any]:
    """Every policy of `simulate` on the history, seeds 1..`seeds`: the mean metrics per policy, each seed's,
    and the gains."""
    per_seed: list[dict[str, dict[str, Any]]] = []
    for seed in range(1, seeds + 1):
        load = with_checkpoints(history.workload, seed, keep=history.declared_checkpoints)
        summary = report.summary(runner(load, list(cli.POLICIES), seed), {})
        per_seed.append({name: _without_jobs(entry) for name, entry in summary["policies"].items()})
    policies = mean_over_seeds(per_seed)
    return {"policies": policies, "per_seed": per_seed, "gains": gains(policies)}


def mean_over_seeds(per_seed: Sequence[Mapping[str, Mapping[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each policy's metrics averaged over the seeds (None when a seed has none; text as the first seed says)."""
    means: dict[str, dict[str, Any]] = {}
    for name, first in per_seed[0].items():
        entry: dict[str, Any] = {}
        for key, value in first.items():
            values = [seed[name][key] for seed in per_seed]
            if any(v is None for v in values):
                entry[key] = None
            elif all(isinstance(v, int | float) and not isinstance(v, bool) for v in values):
                mean = sum(values) / len(values)
                whole = all(isinstance(v, int) for v in values) and mean.is_integer()
                entry[key] = int(mean) if whole else round(mean, MEAN_DECIMALS)
            else:
                entry[key] = value
        means[name] = entry
    return means


def gains(policies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Ours ÷ default and ours ÷ the best honest baseline (by average JCT), metric by metric."""
    ours = policies["ours"]
    honest = [name for name in HONEST_BASELINES if name in policies and policies[name]["avg_jct_s"] is not None]
    best = min(honest, key=lambda name: float(policies[name]["avg_jct_s"]))
    return {
        "against_default": ratios(ours, policies["default"]),
        "best_baseline": best,
        "against_best_baseline": ratios(ours, policies[best]),
    }


def ratios(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> dict[str, float | None]:
    """Ours ÷ theirs per compared metric; None where theirs is zero or either is missing."""
    return {
        key: None if ours[key] is None or not theirs[key] else round(ours[key] / theirs[key], RATIO_DECIMALS)
        for key, _ in RATIOS
    }


def render(comparison: Mapping[str, Any]) -> str:
    """The per-policy table and what ours would gain, as text."""
    shown = [column for key in SHOWN for column in report.COLUMNS if column[0] == key]
    found = comparison["gains"]
    best = found["best_baseline"]
    rows = {"default": found["against_default"], f"{best} (best honest baseline)": found["against_best_baseline"]}
    ratio_columns = [(key, title, "{:.3f}") for key, title in RATIOS]
    lines = [
        report.table({"policies": comparison["policies"]}, shown),
        "What the team would gain with ours: ours ÷ the other policy (below 1: ours is better).",
        "",
        report.table({"policies": rows}, ratio_columns, first="against"),
        headline(found["against_default"], "default"),
        headline(found["against_best_baseline"], best),
    ]
    return "\n".join(lines) + "\n"


def headline(ratio: Mapping[str, float | None], other: str) -> str:
    """One sentence: how much shorter (or longer) ours makes the average JCT and the makespan than `other`."""
    parts = []
    for key, title in RATIOS[::2]:
        value = ratio[key]
        if value is not None:
            change = (1 - value) * 100
            parts.append(f"{title} {'−' if change >= 0 else '+'}{abs(change):.1f} %")
    return f"against {other}: " + (", ".join(parts) or "nothing to compare")


def _without_jobs(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A policy's metrics without the per-job detail."""
    return {key: value for key, value in entry.items() if key != "jobs"}
