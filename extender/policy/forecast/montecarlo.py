"""When each waiting gang starts: the queue run forward over sampled futures (pure).

The forward run is the admission rule in aggregate: at every instant, the waiting gangs are taken in rank
order and each one whose start needs fit in what the cluster has free starts (a gang that does not fit lets
the ones behind it go first, as the extender lets a lower gang take room a higher one cannot use yet); a
started gang holds what it started with until it ends. What is not known is how long each job runs: a
running job's remaining time and a waiting job's run time are drawn from the Kaplan–Meier curve of the run
times seen finish (`RunTimes`), conditioned on what the running one has run. Each of `samples` futures is
one draw of every job, and one draw of how long jobs run here at all: all the run times of a future are
scaled by one log-normal factor whose spread is the standard error of the mean log run time
(`run_time_scale_error`), so the few runs a new cluster has seen finish widen every band, and a long
history leaves the bands as they were. All of them advance together, event by event, as arrays (samples ×
jobs), so a refresh costs a few hundred array steps whatever the sample count.

A gang that starves (`starvation_limit_s`) gets room by preemption: it starts, room or not, after a
draw from the curve of how long gangs in this cluster took from starving to starting
(`ForecastInputs.starving`), and the room it takes is lent from what is free, so what starts after it
waits for as much to free again (`forward`).

What it assumes, and where it says "unknown" instead of a number:
- capacity is summed over the schedulable nodes of each pool (`pools`: nodes split by which waiting pods
  their taints and labels admit; one pool where every pod may go everywhere), a gang taking room only from
  the pools its pods may go to, except at the first instant, where a gang whose workers do not fit node by
  node waits for the first job to end (`WaitingGang.held_now`); from then on what is fragmented is not seen
  (calibration widens what this misses);
- jobs arriving later, and the preemption loop shrinking running elastic jobs for a waiting gang, do not
  change the order (sampling later arrivals from the recent rate and mix of TFJobs into the run, and
  counting the elastic surplus as room, were measured worse: see docs/start-forecast.md); the scaler's
  growth is counted (`forward`): room no waiting gang takes goes to the elastic jobs ranked above every
  gang still waiting, until they end;
- a run time beyond the longest one seen finish is not in the curve: a draw landing in its censored tail
  runs on for an exponential draw of the longer of that run and what the job has run (`draw_remaining`);
- a gang whose start needs exceed the whole cluster, or whose pods no arrangement of its nodes holds even
  with all of them empty (a worker bigger than any node), never starts, and one that does not fit even once every
  running gang has ended (pods outside any gang hold the rest) has no p50: both are "unknown", with why;
  so is every gang while fewer than `min_history` run times have been seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from extender.policy.core.resources import describe_amount
from extender.policy.forecast.forward import starts_given
from extender.policy.forecast.model import (
    FIT_SLACK,
    QUANTILES,
    ForecastInputs,
    StartBand,
    WaitingGang,
)
from extender.policy.preemption.residual_life import RunTimes


def draw_remaining(curve: RunTimes, attained: np.ndarray, uniforms: np.ndarray, tail: np.ndarray) -> np.ndarray:
    """Remaining run times (samples × jobs) of jobs that have run `attained` seconds, by inverting the
    survival curve conditioned on it at `uniforms`. A draw past the longest run seen finish (the curve's
    censored tail) runs on from there for `tail` (standard exponential draws) × the longer of that run and
    what the job has run: a job that has run long is taken to run about as long again."""
    times = np.asarray(curve.times, dtype=np.float64)
    survival = np.asarray(curve.survival, dtype=np.float64)
    step = np.searchsorted(times, attained, side="right")
    alive = np.where(step > 0, survival[np.maximum(step - 1, 0)], 1.0)
    target = uniforms * alive[None, :]
    # The first observed time at which survival has fallen to the target or below: survival is
    # non-increasing, so search its negation.
    index = np.searchsorted(-survival, -target, side="left")
    index = np.maximum(index, step[None, :])
    past_end = index >= len(times)
    ends = times[np.minimum(index, len(times) - 1)]
    longest = times[-1]
    beyond = np.maximum(longest - attained, 0.0)[None, :] + tail * np.maximum(attained, longest)[None, :]
    drawn: np.ndarray = np.where(past_end, beyond, np.maximum(ends - attained[None, :], 0.0))
    return drawn


def forecast_starts(inputs: ForecastInputs, samples: int, seed: int, min_history: int = 3) -> dict[str, StartBand]:
    """Each waiting gang's start band, seconds from now (see the module docstring)."""
    waiting = inputs.waiting
    if not waiting:
        return {}
    needs, too_big = _needs(inputs)
    bands = {
        gang.key: StartBand(unknown=_never_starts(inputs, gang, needs[index]))
        for index, gang in enumerate(waiting)
        if too_big[index]
    }
    if inputs.curve.finished < min_history:
        why = f"fewer than {min_history} jobs seen finish ({inputs.curve.finished}): no run times to go by"
        return {gang.key: bands.get(gang.key, StartBand(unknown=why)) for gang in waiting}
    starts = _run_forward(inputs, too_big, samples, seed)
    for index, gang in enumerate(waiting):
        if not too_big[index]:
            why = "it does not fit even once every running gang has ended (pods outside any gang hold the rest)"
            bands[gang.key] = _band(starts[:, index]) or StartBand(unknown=why, samples=samples)
    return bands


def _needs(inputs: ForecastInputs) -> tuple[np.ndarray, np.ndarray]:
    """The waiting gangs' start needs (gangs × resources), and which of them can never start: they exceed the
    whole cluster, or no arrangement of its nodes holds them even empty (`WaitingGang.never_fits`)."""
    width = len(inputs.resources)
    capacity = np.asarray([inputs.capacity_of(gang) for gang in inputs.waiting], dtype=np.float64).reshape(-1, width)
    needs = np.asarray([gang.needs for gang in inputs.waiting], dtype=np.float64).reshape(-1, width)
    never_fits = np.asarray([gang.never_fits for gang in inputs.waiting], dtype=bool)
    too_big: np.ndarray = np.asarray((needs > capacity * (1 + FIT_SLACK)).any(axis=1)) | never_fits
    return needs, too_big


def _band(starts: np.ndarray) -> StartBand | None:
    """The band of one gang's sampled start times; None when its p50 falls on a start no draw could tell."""
    p10, p50, p90 = (_quantile(starts, q) for q in QUANTILES)
    return None if p50 is None else StartBand(p10, p50, p90, samples=len(starts))


def _run_forward(
    inputs: ForecastInputs, never: np.ndarray, samples: int, seed: int, until: int | None = None
) -> np.ndarray:
    """Start times (samples × waiting gangs) over `samples` drawn futures."""
    rng = np.random.default_rng(seed)
    attained = np.asarray([job.attained_s for job in inputs.running], dtype=np.float64)
    waiting = len(inputs.waiting)
    shape_running, shape_waiting = (samples, len(attained)), (samples, waiting)
    remaining = draw_remaining(inputs.curve, attained, rng.random(shape_running), rng.exponential(size=shape_running))
    durations = draw_remaining(
        inputs.curve, np.zeros(waiting), rng.random(shape_waiting), rng.exponential(size=shape_waiting)
    )
    forced = _forced_starts(inputs, rng, samples)
    scale = np.exp(run_time_scale_error(inputs.curve) * rng.standard_normal(samples))[:, None]
    return starts_given(inputs, remaining * scale, durations * scale, never, until, forced=forced)


def run_time_scale_error(curve: RunTimes) -> float:
    """How uncertain the cluster's typical run time is from the few finished runs seen: the standard error
    of the mean log run time (the spread of log run times over the curve's finished mass, over √finished)."""
    if curve.finished < 2 or not curve.times:
        return 0.0
    survival = np.asarray(curve.survival, dtype=np.float64)
    mass = -np.diff(np.concatenate([[1.0], survival]))
    if mass.sum() <= 0:
        return 0.0
    logs = np.log(np.maximum(np.asarray(curve.times, dtype=np.float64), 1.0))
    weights = mass / mass.sum()
    mean = float(weights @ logs)
    spread = float(np.sqrt(weights @ (logs - mean) ** 2))
    return spread / float(np.sqrt(curve.finished))


def _forced_starts(inputs: ForecastInputs, rng: np.random.Generator, samples: int) -> np.ndarray | None:
    """When each waiting gang starts by preemption (samples × gangs): when it starves, plus a draw from
    `ForecastInputs.starving` conditioned on how long it has starved; None without that curve."""
    curve = inputs.starving
    if curve is None or not curve.times:
        return None
    starves_in = np.asarray([gang.starves_in_s for gang in inputs.waiting], dtype=np.float64)
    starved = np.asarray([gang.starving_s for gang in inputs.waiting], dtype=np.float64)
    shape = (samples, len(starves_in))
    delay = draw_remaining(curve, starved, rng.random(shape), rng.exponential(size=shape))
    forced: np.ndarray = starves_in[None, :] + delay
    return forced


def what_if(
    inputs: ForecastInputs, key: str, samples: int, seed: int, min_history: int = 3
) -> tuple[tuple[int, StartBand], ...]:
    """The gang `key`'s start band at each of its smaller sizes (`WaitingGang.smaller`), each from a forward
    run in which it needs only that much, stopped once it has started in every future."""
    index = next((i for i, gang in enumerate(inputs.waiting) if gang.key == key), None)
    if index is None or inputs.curve.finished < min_history:
        return ()
    gang = inputs.waiting[index]
    bands = []
    for workers, needs in gang.smaller:
        variant = replace(
            inputs,
            waiting=(
                *inputs.waiting[:index],
                replace(gang, needs=needs, workers=workers),
                *inputs.waiting[index + 1 :],
            ),
        )
        _, never = _needs(variant)
        if never[index]:
            continue
        band = _band(_run_forward(variant, never, samples, seed, until=index)[:, index])
        if band is not None:
            bands.append((workers, band))
    return tuple(bands)


def _quantile(values: np.ndarray, q: float) -> float | None:
    """The `q` quantile of the sampled start times, `None` when it falls on a start no draw could tell."""
    ordered = np.sort(values)
    at = ordered[min(len(ordered) - 1, int(np.ceil(q * len(ordered))) - 1)]
    return float(at) if np.isfinite(at) else None


def _never_starts(inputs: ForecastInputs, gang: WaitingGang, needs: Sequence[float]) -> str:
    """Why a gang `_needs` found can never start: first what is short in all, then node by node."""
    if gang.kept_out:
        return (
            f"no schedulable node admits its pod {gang.kept_out} (node selector, required node affinity, "
            "tolerations), so it cannot start until one does"
        )
    short = _bigger_than(inputs, gang, needs)
    if short or not gang.never_fits:
        return short
    if gang.fits_empty_workers is not None and gang.fits_empty_workers < 0:
        return "one of its replicas other than workers fits no node even empty, so it can never start"
    return (
        f"its {gang.workers} workers do not fit on the nodes they may go to even with all of them empty (at most "
        f"{gang.fits_empty_workers} beside its other replicas, node by node), so it can never start at this size"
    )


def _bigger_than(inputs: ForecastInputs, gang: WaitingGang, needs: Sequence[float]) -> str:
    """What the gang needs beyond all the nodes it may go to have, in words; "" when nothing."""
    reach = inputs.capacity_of(gang)
    short = [
        f"{describe_amount(name, round(need))} of {describe_amount(name, round(have))}"
        for name, need, have in zip(inputs.resources, needs, reach, strict=True)
        if need > have * (1 + FIT_SLACK)
    ]
    where = (
        "the nodes it may go to have (node selector, required node affinity, tolerations)"
        if reach != inputs.capacity
        else "the whole cluster has"
    )
    return f"it needs more than {where}, so it can never start: " + ", ".join(short) if short else ""
