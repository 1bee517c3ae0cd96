"""GPU scenarios shaped like converted GPU traces: contended rigid gangs, heavy-tailed run times, and a
mix of elastic and rigid jobs, each from one seeded generator (`gpu_trace`).

Nodes of 4 GPUs; each job one CPU PS and 1–8 one-GPU workers; run times drawn light- or heavy-tailed (as
the Philly and Helios analyses describe GPU job durations); Poisson arrivals asking a set share of the
GPUs, so that jobs queue.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping

from extender.sim.throughput import MODELS, HardwareProfile
from extender.sim.workload import JobSpec, NodeSpec, Workload, replace_spec, with_checkpoints, with_run_time

GPU_GANG_WORKER_COUNTS: Mapping[int, float] = {1: 0.35, 2: 0.2, 3: 0.04, 4: 0.2, 5: 0.03, 6: 0.05, 7: 0.03, 8: 0.1}
"""Share of jobs per worker count (one GPU each) in the GPU-trace scenarios: mostly 1, 2 and 4 GPUs, a
tenth at 8, the powers of two dominating as in the Philly and Helios GPU-count histograms (shape chosen,
not fitted)."""
GPU_TRACE_NIC_GBPS = 25.0
GPU_GANGS_OFFERED_LOAD = 1.2
"""GPU-seconds asked per GPU-second the cluster has over the arrival window (at `--load 1`) in the
light-tailed GPU scenarios: the queue grows while jobs arrive and drains after."""
HEAVY_TAIL_OFFERED_LOAD = 2.0
"""The same for the heavy-tailed scenario. Its few long jobs run for hours, far past the arrival window,
so half of what they ask is not offered inside it: asking twice the GPUs keeps the short jobs queueing
behind them."""
HEAVY_TAIL_MEDIAN_S = 180.0
HEAVY_TAIL_SIGMA = 1.6
"""Log-normal run time: median 3 minutes, σ = 1.6 (mean ≈ 11 minutes, 1 job in 20 above 40 minutes)."""
HEAVY_TAIL_MAX_S = 4 * 3600.0
MIXED_ELASTIC_SHARE = 0.5
"""Share of jobs submitted elastic in the mixed scenario."""

RunTime = Callable[[random.Random], float]


def light_tailed_run_s(rng: random.Random) -> float:
    """A few minutes: 60 s plus a gamma(2, 100 s) draw (mean 260 s), at most 15 minutes."""
    return min(900.0, 60.0 + rng.gammavariate(2.0, 100.0))


def heavy_tailed_run_s(rng: random.Random) -> float:
    """Most jobs a few minutes, a few hours long: log-normal, at least 30 s, at most `HEAVY_TAIL_MAX_S`."""
    return min(HEAVY_TAIL_MAX_S, max(30.0, math.exp(rng.gauss(math.log(HEAVY_TAIL_MEDIAN_S), HEAVY_TAIL_SIGMA))))


def gpu_gangs(seed: int = 1, jobs: int = 100, nodes: int = 8) -> Workload:
    """Contended rigid GPU gangs, shaped like a converted GPU trace: every job rigid (min = max = submitted),
    a few minutes long and light-tailed (`light_tailed_run_s`), arriving at `GPU_GANGS_OFFERED_LOAD`."""
    return gpu_trace(f"gpu-gangs-{jobs}x{nodes}", seed, jobs, nodes, light_tailed_run_s, 0.0, GPU_GANGS_OFFERED_LOAD)


def heavy_tail(seed: int = 1, jobs: int = 100, nodes: int = 8) -> Workload:
    """Rigid GPU gangs with heavy-tailed run times (`heavy_tailed_run_s`): most jobs short, a few very long,
    as the Philly (Jeon et al., ATC '19) and Helios (Hu et al., SC '21) analyses describe GPU job durations."""
    return gpu_trace(f"heavy-tail-{jobs}x{nodes}", seed, jobs, nodes, heavy_tailed_run_s, 0.0, HEAVY_TAIL_OFFERED_LOAD)


def mixed(seed: int = 1, jobs: int = 100, nodes: int = 8) -> Workload:
    """The light-tailed GPU gangs with half the jobs elastic (between half and twice their submitted workers,
    at most 8) and half rigid."""
    name = f"mixed-{jobs}x{nodes}"
    return gpu_trace(name, seed, jobs, nodes, light_tailed_run_s, MIXED_ELASTIC_SHARE, GPU_GANGS_OFFERED_LOAD)


def gpu_trace(
    name: str,
    seed: int,
    jobs: int,
    nodes: int,
    run_time: RunTime,
    elastic_share: float,
    offered_load: float,
) -> Workload:
    """GPU jobs shaped like a converted GPU trace (Philly, Helios, Tiresias' inputs): 4-GPU nodes (32 cores,
    192 GiB, 25 Gb/s); each job one CPU PS (2 cores, 8 GiB) and 1–8 workers of one GPU (4 cores, 16 GiB) drawn
    from `GPU_GANG_WORKER_COUNTS`; a run time at its submitted size from `run_time`; elastic with probability
    `elastic_share` (min = half, max = twice the submitted workers, at most 8), rigid otherwise; Poisson
    arrivals whose rate asks `offered_load` of the GPUs over the arrival window."""
    rng = random.Random(seed)
    node_specs = tuple(NodeSpec(f"node-{i:02d}", "32", "192Gi", 4) for i in range(nodes))
    hardware = HardwareProfile(nic_bytes_s=GPU_TRACE_NIC_GBPS * 1e9 / 8)
    counts, shares = zip(*GPU_GANG_WORKER_COUNTS.items(), strict=True)
    drafts = []
    for index in range(jobs):
        workers = rng.choices(counts, shares)[0]
        elastic = rng.random() < elastic_share
        spec = JobSpec(
            name=f"job-{index:03d}",
            arrival_s=0.0,
            model=rng.choice(list(MODELS)),
            batch=rng.choice((32, 64, 128, 256)),
            epochs=1.0,
            ps=1,
            workers=workers,
            min_workers=max(1, workers // 2) if elastic else workers,
            max_workers=min(8, workers * 2) if elastic else workers,
            ps_cpu="2",
            ps_memory="8Gi",
            worker_cpu="4",
            worker_memory="16Gi",
            worker_gpu=1,
            elastic=elastic,
        )
        run_s = run_time(rng)
        drafts.append((with_run_time(spec, run_s, hardware), run_s))
    gpu_seconds = sum(spec.workers * run_s for spec, run_s in drafts)
    mean_gap = gpu_seconds / (nodes * 4 * offered_load) / jobs
    specs = []
    clock = 0.0
    for spec, _ in drafts:
        clock += rng.expovariate(1.0 / mean_gap)
        specs.append(replace_spec(spec, arrival_s=round(clock, 1)))
    return with_checkpoints(Workload(name, node_specs, tuple(specs), nic_gbps=GPU_TRACE_NIC_GBPS), seed)
