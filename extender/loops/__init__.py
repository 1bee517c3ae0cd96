"""The loops: level-triggered background work that acts on the cluster through the actuator.

- `preemption`: job-level preemption for the highest-ranked gangs that cannot start, and the reasons
  waiting gangs are given;
- `scaler`: grows elastic TFJobs into idle capacity and consolidates them onto their PS;
- `leadership`: only the instance holding the lease acts;
- `actuator`: the one seam for side effects (the Kubernetes implementation is `extender.k8s.actuator`);
- `ticking`: the thread both loops tick on.
Each loop plans with the pure policy on a fresh snapshot and commits through `state.commits`; the HTTP
layer renders what they did (`extender.api`), and the simulator drives the same loops on virtual time.
"""
