"""A discrete-event simulator that replays TFJob workloads through the extender's own policy code and
through baseline schedulers, and reports job completion times and utilisation side by side.

`workload` describes jobs and clusters (the KOD2 experiment, a PAI-shaped trace generator, a trace file
format, live snapshots); `throughput` turns a placement into a training rate; `cluster` is the simulated
API server (TFJob, PodGroup and pod objects, training-operator's reconcile); `kube` emulates
kube-scheduler's loop; `policies` holds "ours" (the real filter/prioritize/preemption code) and the
baselines; `engine` advances the virtual clock; `report` writes report.json, a table and plots.
"""
