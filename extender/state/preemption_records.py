"""The preemptions the model knows of, and the pods each still has leaving.

A preemption is recorded when it is decided here or announced on its gang's PodGroup by the process that
carried it out, and forgotten when it is withdrawn or its gang's PodGroup goes; `LeavingPods` follows which
victims still hold their node. A part of `ClusterState`, split out in the manner of `ReservationBook`: it
uses the model's maps under the model's lock and never takes it itself.
"""

from __future__ import annotations

from extender.policy.core.frozenmap import CowMap
from extender.policy.core.views import GangKey, PodView, PreemptionRecord
from extender.state.leaving_pods import LeavingPods


class PreemptionRecords:
    """Preemption records of `ClusterState`; the maps are `ClusterState`'s."""

    _pods: CowMap[str, PodView]
    _preemptions: CowMap[str, PreemptionRecord]
    _leaving: LeavingPods

    def _record_preemption(self, record: PreemptionRecord) -> None:
        """Remember a preemption (decided here, or announced on its gang's PodGroup by the process that
        carried it out), unless a later one for the same gang is already known."""
        known = self._preemptions.get(record.gang)
        if known == record or (known is not None and known.at > record.at):
            return
        if known is not None:
            self._leaving.forget(known, self._pods)
        self._preemptions.set(record.gang, record)
        self._leaving.record(record, self._pods)

    def _forget_preemption(self, gang: str, only: PreemptionRecord | None) -> None:
        """Drop the record of an abandoned preemption for `gang` (only if it is `only`, when given)."""
        known = self._preemptions.get(gang)
        if known is None or (only is not None and known != only):
            return
        self._preemptions.delete(gang)
        self._leaving.forget(known, self._pods)

    def _forget_preemptions_of(self, group: str) -> None:
        """Drop the records of preemptions carried out for a gang this PodGroup belonged to: with the
        PodGroup gone, the gang they made room for is gone too."""
        for gang in [gang for gang in self._preemptions if group in GangKey(gang).groups]:
            self._forget_preemption(gang, None)
