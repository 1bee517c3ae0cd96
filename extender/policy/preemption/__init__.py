"""Job-level preemption, the whole policy in one place (pure).

- `search`: whether a gang may preempt at all and what it could take (eligibility, the ceiling check,
  candidate subjects from the gang queue's totals);
- `victims`: the cheapest victim set for a whole gang (prefix-sum pruning, one subject, then cheapest
  first, each checked by the gang planner's dry run);
- `scale_in`: KOD2 scale-in, the cheapest form — surplus workers of lower-ranked elastic jobs;
- `choice`: which waiting gang the preemption loop makes room for next, and the ledger change a carried
  out plan commits;
- `verb`: the answer to kube-scheduler's `preempt` call.
The preemption loop (`extender.loops.preemption`) carries the chosen plan out; nothing here acts.
"""
