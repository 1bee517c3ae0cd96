"""The training-throughput model: how fast a PS/worker TFJob progresses in a given placement.

Asynchronous parameter-server training (the KOD2 setting): every worker loops independently over
  compute  – forward + backward on one mini-batch:  3 × forward FLOPs × batch / worker speed,
  exchange – push gradients to and pull parameters from every PS shard: 2 × model bytes in total,
             split evenly over the PS; each shard's share moves at loopback bandwidth when the worker
             sits on that PS's node, at NIC bandwidth otherwise,
  overhead – a fixed per-iteration framework cost,
so one worker makes `batch / (compute + exchange + overhead)` samples per second. The PS side caps the
sum: a PS shard applies updates at `ps_apply_bytes_per_core_s` per core it requests, and the remote part
of its traffic cannot exceed its node's NIC; when the workers ask for more, all of them slow down by the
same factor (the PS bottleneck). A job makes progress only when every PS and (unless it is elastic) every
worker runs: TF1's session creation waits for every task in TF_CONFIG. Constants and their sources are in
`MODELS`, `HardwareProfile` and docs/simulation/README.md.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender.policy.core.resources import CPU, GPU, Resources


@dataclass(frozen=True, slots=True)
class ModelProfile:
    name: str
    params_millions: float
    """Trainable parameters (millions); 4 bytes each on the wire."""
    forward_gflops: float
    """Forward pass per 32×32 CIFAR-10 sample (GFLOPs); training costs 3× this (forward + backward)."""

    @property
    def model_bytes(self) -> float:
        return self.params_millions * 1e6 * 4


MODELS: Mapping[str, ModelProfile] = {
    # Text-CNN (Kim 2014) adapted to images: 3 filter widths × 100 maps + dense; ≈0.6 M params.
    "cnn-rand": ModelProfile("cnn-rand", 0.6, 0.02),
    # VGG-16 for CIFAR-10 (13 conv + 1 FC, 32×32 input): 14.7 M params, 0.31 GFLOPs (Simonyan & Zisserman 2014,
    # CIFAR variant as in common reference implementations).
    "vgg16": ModelProfile("vgg16", 14.7, 0.31),
    # ResNet-50 bottleneck net on 32×32 input without the ImageNet stem downsampling: 23.5 M params, 1.3 GFLOPs.
    "resnet50": ModelProfile("resnet50", 23.5, 1.3),
    # "ResNeXt-110": the 110-layer CIFAR ResNet (He et al. 2016: 1.7 M params, 0.25 GFLOPs) with grouped
    # 3×3 convolutions (cardinality 8); grouping keeps the parameter count and adds ≈20 % FLOPs.
    "resnext110": ModelProfile("resnext110", 1.7, 0.30),
}


@dataclass(frozen=True, slots=True)
class HardwareProfile:
    core_gflops: float = 20.0
    """Sustained training GFLOP/s per requested CPU core (an i9-10900K core peaks near 118 fp32 GFLOP/s with
    AVX2 FMA; TensorFlow CPU convolutions reach 15–20 % of peak)."""
    gpu_gflops: float = 6000.0
    """Sustained training GFLOP/s per requested GPU (an RTX 3090 peaks at 35.6 fp32 TFLOP/s; small CIFAR
    batches keep it near 15–20 %)."""
    nic_bytes_s: float = 125e6
    """Node NIC bandwidth, bytes/s (1 Gb/s Ethernet, a desktop-class testbed)."""
    loopback_bytes_s: float = 4e9
    """Bandwidth between a worker and a PS on the same node (gRPC over loopback), bytes/s."""
    ps_apply_bytes_per_core_s: float = 1e9
    """Gradient bytes a PS shard can receive and apply per second per requested core."""
    iteration_overhead_s: float = 0.01
    """Fixed framework cost per iteration (session run, queueing), seconds."""


@dataclass(frozen=True, slots=True)
class Task:
    """One running replica of a job, as the model sees it."""

    node: str
    requests: Resources


@dataclass(frozen=True, slots=True)
class Rate:
    samples_s: float
    """Job-wide training throughput, samples per second."""
    cpu_busy: float
    """Cores actually busy (compute share of each worker's iteration × its cores, plus PS load), in cores."""
    gpu_busy: float
    """GPUs actually busy, in GPUs."""


IDLE = Rate(0.0, 0.0, 0.0)


def worker_speed(requests: Resources, hw: HardwareProfile) -> float:
    """FLOP/s a worker with these requests sustains."""
    cores = requests.get(CPU) / 1000
    return (cores * hw.core_gflops + requests.get(GPU) * hw.gpu_gflops) * 1e9


def job_rate(
    model: ModelProfile,
    batch: int,
    ps: Sequence[Task],
    workers: Sequence[Task],
    hw: HardwareProfile,
) -> Rate:
    """Throughput and busy resources of a job whose PS and workers run where `ps` and `workers` say."""
    if not ps or not workers:
        return IDLE
    shard = 2 * model.model_bytes / len(ps)
    flops = 3 * model.forward_gflops * 1e9 * batch
    iterations: list[float] = []
    compute_share: list[float] = []
    remote_per_ps = [0.0] * len(ps)
    load_per_ps = [0.0] * len(ps)
    for worker in workers:
        compute = flops / max(worker_speed(worker.requests, hw), 1.0)
        exchange = sum(shard / (hw.loopback_bytes_s if p.node == worker.node else hw.nic_bytes_s) for p in ps)
        period = compute + exchange + hw.iteration_overhead_s
        iterations.append(1.0 / period)
        compute_share.append(compute / period)
        for index, p in enumerate(ps):
            load_per_ps[index] += shard / period
            if p.node != worker.node:
                remote_per_ps[index] += shard / period
    slowdown = 1.0
    for index, p in enumerate(ps):
        capacity = max(p.requests.get(CPU) / 1000, 0.1) * hw.ps_apply_bytes_per_core_s
        slowdown = max(slowdown, load_per_ps[index] / capacity, remote_per_ps[index] / hw.nic_bytes_s)
    samples = batch * sum(iterations) / slowdown
    cpu = sum(w.requests.get(CPU) / 1000 * share / slowdown for w, share in zip(workers, compute_share, strict=True))
    gpu = sum(w.requests.get(GPU) * share / slowdown for w, share in zip(workers, compute_share, strict=True))
    for index, p in enumerate(ps):
        capacity = max(p.requests.get(CPU) / 1000, 0.1) * hw.ps_apply_bytes_per_core_s
        cpu += p.requests.get(CPU) / 1000 * min(1.0, load_per_ps[index] / slowdown / capacity)
    return Rate(samples, cpu, gpu)
