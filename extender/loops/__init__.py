"""The loops: level-triggered background work that acts on the cluster through the actuator.

- `preemption`: job-level preemption for the highest-ranked gangs that cannot start, in four steps; its
  parts are `suspension` (suspend, resume, run-time history), `executor` (carries plans out) and
  `reporter` (state and wait Events), its knobs `preemption_settings`, its counts `preemption_counts`;
- `scaler`: grows elastic TFJobs into idle capacity and consolidates them onto their PS (its records and
  counts in `scaler_records`);
- `leadership`: only the instance holding the lease acts;
- `actuator`: the one seam for side effects (the Kubernetes implementation is `extender.k8s.actuator`);
- `ticking`: the thread both loops tick on.
Each loop plans with the pure policy on a fresh snapshot and commits through `state.commits`; the HTTP
layer renders what they did (`extender.api`), and the simulator drives the same loops on virtual time.
"""
