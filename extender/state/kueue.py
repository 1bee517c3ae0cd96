"""Whether Kueue decides a TFJob's admission, from what Kueue (v0.17) and its users put on the TFJob.

Kueue's jobframework reconciler owns `spec.runPolicy.suspend` of a job it manages: it unsuspends an
admitted job that someone else suspended, suspends a running job without admission, and suspends one
whose pod counts stop matching its Workload. The preemption loop and the scaler therefore leave such a
TFJob alone (`JobView.kueue_managed`). A TFJob is Kueue's when:
- it carries the label `kueue.x-k8s.io/queue-name` (its LocalQueue; set by the user, or by Kueue's
  webhook when LocalQueue defaulting fills it in) or `kueue.x-k8s.io/prebuilt-workload-name`;
- an owner reference names a `kueue.x-k8s.io` Workload;
- a replica template carries what Kueue writes on admission with topology-aware scheduling: the
  annotation `kueue.x-k8s.io/workload` or the label `kueue.x-k8s.io/podset`.
A namespace Kueue manages without queue names (`manageJobsWithoutQueueName`) leaves no mark on the
TFJob itself; such a TFJob is not recognised (give it its queue name).
"""

from __future__ import annotations

from extender.state import fields
from extender.state.fields import Json

KUEUE_API_GROUP = "kueue.x-k8s.io"
QUEUE_NAME_LABEL = "kueue.x-k8s.io/queue-name"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
POD_SET_LABEL = "kueue.x-k8s.io/podset"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
"""Names the WorkloadPriorityClass whose value Kueue gives the job's Workload as its priority."""
WORKLOAD_KIND = "Workload"


def workload_priority_class(meta: Json) -> str:
    """The WorkloadPriorityClass a TFJob's label names ("" for none)."""
    labels = fields.mapping(meta, "labels", "metadata.labels")
    return str(labels.get(PRIORITY_CLASS_LABEL) or "")


def managed_by_kueue(meta: Json, spec: Json) -> bool:
    """Whether the TFJob with this metadata and spec is admitted by Kueue (see the module's rules)."""
    labels = fields.mapping(meta, "labels", "metadata.labels")
    if labels.get(QUEUE_NAME_LABEL) or labels.get(PREBUILT_WORKLOAD_LABEL):
        return True
    for owner in fields.objects(meta, "ownerReferences", "metadata.ownerReferences"):
        api_version = str(owner.get("apiVersion") or "")
        if api_version.split("/", 1)[0] == KUEUE_API_GROUP and owner.get("kind") == WORKLOAD_KIND:
            return True
    replica_specs = fields.mapping(spec, "tfReplicaSpecs", "spec.tfReplicaSpecs")
    for replica_type, replica_spec in replica_specs.items():
        if not isinstance(replica_spec, dict):
            continue
        path = f"spec.tfReplicaSpecs.{replica_type}.template.metadata"
        template_meta = fields.mapping(fields.mapping(replica_spec, "template", path), "metadata", path)
        if fields.mapping(template_meta, "annotations", f"{path}.annotations").get(WORKLOAD_ANNOTATION):
            return True
        if fields.mapping(template_meta, "labels", f"{path}.labels").get(POD_SET_LABEL):
            return True
    return False
