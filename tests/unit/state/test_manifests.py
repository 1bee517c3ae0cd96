"""Snapshot files: `dump_state` written out and read back by `load_snapshot_file`, kubectl output, bad files."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
import yaml

from extender.policy import filter_pod
from extender.policy.core.resources import CPU, MEMORY, PODS, Resources
from extender.policy.core.snapshot import ClusterSnapshot
from extender.policy.core.views import Role
from extender.state import json_documents, manifests
from extender.state.kinds import Kind
from extender.state.manifests import SnapshotFileError, dump_state, dump_state_chunks, load_objects
from extender.state.offline import load_snapshot_file
from extender.state.store import ClusterState
from tests.builders import Obj, cluster, hold, make_node, make_pod, make_podgroup, make_tfjob, tfjob_pods
from tests.unit.policy.loop import NOW, SETTINGS

GI = 2**30


def rich_cluster() -> ClusterState:
    """Every kind, both PodGroup dialects, a GangGroup, odd pods, and a committed gang plan."""
    mnist = tfjob_pods("mnist", ps=1, workers=3, cpu="1500m", memory="2Gi", nodes={"mnist-ps-0": "node-0"})
    init_pod = make_pod("init", cpu="500m", memory="128Mi", priority=100)
    init_pod["spec"]["initContainers"] = [{"name": "setup", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}]
    init_pod["spec"]["overhead"] = {"cpu": "100m"}
    init_pod["spec"]["preemptionPolicy"] = "Never"
    init_pod["spec"]["nodeSelector"] = {"zone": "a"}
    launcher = make_pod("launcher", role="Launcher", index=3)  # a replica type the model does not know
    job = make_tfjob("mnist", workers=3, dynamic=True)
    job["spec"]["runPolicy"] = {"schedulingPolicy": {"priorityClass": "high"}}
    gang = ["default/a", "default/b"]
    legacy = [
        make_pod(f"{g}-worker-0", group=g, legacy_group=True, job=g, role="worker", namespace="default") for g in "ab"
    ]
    group = make_podgroup("mnist", min_member=4, timeout_s=120)
    group["spec"]["minResources"] = {"cpu": "6", "memory": "8Gi"}
    state = cluster(
        make_node("node-0", cpu="8", memory="32Gi", labels={"zone": "a"}),
        make_node("node-1", cpu="16", memory="64Gi", gpu=4),
        make_node("node-2", unschedulable=True),
        make_node("node-3", ready=False),
        *mnist,
        group,
        job,
        make_tfjob("a", ps=0, workers=1, namespace="default"),
        make_podgroup("a", min_member=1, legacy=True, gang_group=gang),
        make_podgroup("b", min_member=1, legacy=True, gang_group=gang),
        *legacy,
        init_pod,
        launcher,
        make_pod("done", node="node-1", phase="Succeeded"),
        make_pod("leaving", node="node-1", phase="Running", terminating=True),
        make_pod("other", namespace="team-b", scheduler="default-scheduler", node="node-1", phase="Running"),
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    )
    snapshot = state.snapshot()
    decision = filter_pod(snapshot, snapshot.pods["default/mnist-worker-0"], ["node-0", "node-1"], SETTINGS, NOW)
    assert decision.outcome == "planned"
    hold(state, reserve=decision.reserve)
    return state


def views(snapshot: ClusterSnapshot) -> dict[str, dict[str, object]]:
    return {
        "nodes": dict(snapshot.nodes),
        "pods": dict(snapshot.pods),
        "groups": dict(snapshot.groups),
        "group_members": dict(snapshot.group_members),
        "jobs": dict(snapshot.jobs),
        "job_members": dict(snapshot.job_members),
        "reservations": dict(snapshot.reservations),
        "reserved_by_node": dict(snapshot.reserved_by_node),
        "priority_classes": dict(snapshot.priority_classes),
    }


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda path, dump: path.write_text(yaml.safe_dump(dump)), id="as YAML"),
        pytest.param(lambda path, dump: path.write_text(json.dumps(dump)), id="as JSON"),
    ],
)
def test_a_dump_read_back_gives_equal_views(tmp_path: Path, write: object) -> None:
    original = rich_cluster()
    before = original.snapshot()
    assert len(before.reservations) == 3  # the three pending mnist workers
    path = tmp_path / "state.yaml"
    write(path, dump_state(before))  # type: ignore[operator]
    loaded = ClusterState()
    count = load_snapshot_file(loaded, path)
    after = loaded.snapshot()
    assert count == len(before.nodes) + len(before.pods) + len(before.groups) + len(before.jobs) + 1
    assert loaded.is_synced()
    assert loaded.rejected_objects == 0
    assert views(after) == views(before)
    assert after.pods["default/init"].requests == Resources({CPU: 2100, MEMORY: GI, PODS: 1})
    assert after.pods["default/launcher"].index == 3


def test_a_dump_keeps_each_pod_group_in_its_own_api_group(tmp_path: Path) -> None:
    path = tmp_path / "state.yaml"
    path.write_text(yaml.safe_dump(dump_state(rich_cluster().snapshot())))
    by_kind, reservations = load_objects(path)
    assert sorted(g["metadata"]["name"] for g in by_kind[Kind.PODGROUP_SIGS]) == ["a", "b"]
    assert [g["metadata"]["name"] for g in by_kind[Kind.PODGROUP]] == ["mnist"]
    assert sorted(r.pod for r in reservations) == [f"default/mnist-worker-{i}" for i in range(3)]


KUBECTL_LIST = """\
apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    labels:
      kubernetes.io/hostname: node-0
    name: node-0
    resourceVersion: "4242"
    uid: 2f0c1f6e-0000-4000-8000-000000000000
  spec:
    podCIDR: 10.244.0.0/24
  status:
    allocatable:
      cpu: "8"
      ephemeral-storage: 95Gi
      memory: 32846128Ki
      pods: "110"
    capacity:
      cpu: "8"
      memory: 32948528Ki
      pods: "110"
    conditions:
    - lastHeartbeatTime: "2026-03-01T10:00:00Z"
      status: "True"
      type: Ready
- apiVersion: v1
  kind: Pod
  metadata:
    creationTimestamp: "2026-03-01T10:15:30Z"
    labels:
      scheduling.x-k8s.io/pod-group: mnist
      training.kubeflow.org/job-name: mnist
      training.kubeflow.org/replica-index: "0"
      training.kubeflow.org/replica-type: worker
    name: mnist-worker-0
    namespace: ml
    ownerReferences:
    - apiVersion: kubeflow.org/v1
      blockOwnerDeletion: true
      controller: true
      kind: TFJob
      name: mnist
      uid: 9a1b2c3d-0000-4000-8000-000000000000
  spec:
    containers:
    - image: tensorflow/tensorflow:2.16.1
      name: tensorflow
      resources:
        limits:
          cpu: "2"
          memory: 4Gi
        requests:
          cpu: 1500m
    schedulerName: tfjob-scheduler
  status:
    phase: Pending
- apiVersion: scheduling.x-k8s.io/v1alpha1
  kind: PodGroup
  metadata:
    name: mnist
    namespace: ml
  spec:
    minMember: 1
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: ignored
    namespace: ml
kind: List
metadata:
  resourceVersion: ""
"""


def test_a_kind_list_as_kubectl_prints_it_loads(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(KUBECTL_LIST)
    state = ClusterState()
    assert load_snapshot_file(state, path) == 3  # the ConfigMap is not a model kind
    snapshot = state.snapshot()
    assert snapshot.nodes["node-0"].node.allocatable.get(MEMORY) == 32846128 * 1024
    pod = snapshot.pods["ml/mnist-worker-0"]
    # requests win over limits where both are set; memory falls back to the 4Gi limit.
    assert pod.requests == Resources({CPU: 1500, MEMORY: 4 * GI, PODS: 1})
    assert (pod.group, pod.job, pod.role) == ("ml/mnist", "ml/mnist", Role.WORKER)
    assert snapshot.groups["ml/mnist"].min_member == 1


def test_several_yaml_documents_load_and_unquoted_times_are_read(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-0}\nstatus: {allocatable: {cpu: 4}}\n"
        "---\n"
        "apiVersion: v1\nkind: Pod\n"
        "metadata: {name: p, creationTimestamp: 2026-03-01T10:15:30Z}\n"
        "spec: {containers: [{name: c, resources: {requests: {cpu: 1}}}]}\n"
        "---\n"
    )
    state = ClusterState()
    assert load_snapshot_file(state, path) == 2
    snapshot = state.snapshot()
    assert snapshot.nodes["node-0"].node.allocatable == Resources({CPU: 4000})
    assert snapshot.pods["default/p"].created == 1772360130.0  # 2026-03-01T10:15:30Z


def bad_pod_yaml(name: str, cpu: str) -> str:
    return (
        f"apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\n"
        f"spec: {{containers: [{{name: c, resources: {{requests: {{cpu: {cpu}}}}}}}]}}\n"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("items: [unclosed\n", r"cluster\.yaml: while parsing", id="text that is not YAML"),
        pytest.param("- a\n- b\n", r"cluster\.yaml: document 1 is not a mapping", id="a YAML list of strings"),
        pytest.param(
            "kind: Node\napiVersion: v1\nmetadata: {name: n}\n---\nplain text\n",
            r"cluster\.yaml: document 2 is not a mapping",
            id="a second document that is a bare string",
        ),
        pytest.param(
            bad_pod_yaml("bad", "lots"),
            r"cluster\.yaml: Pod default/bad: spec\.containers\[0\]\.resources: not a resource quantity: 'lots'",
            id="a pod whose cpu is not a quantity",
        ),
        pytest.param(
            bad_pod_yaml("one", "lots") + "---\n" + bad_pod_yaml("two", "heaps"),
            r"Pod default/one: .*'lots'; Pod default/two: .*'heaps'",
            id="every unreadable object is reported",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems: []\ntfjobExtender:\n  reservations:\n  - {pod: default/p}\n",
            r"tfjobExtender\.reservations: malformed record",
            id="a reservation record without its fields",
        ),
        pytest.param(
            "apiVersion: v1\nkind: List\nitems: []\ntfjobExtender:\n  reservations:\n"
            "  - {pod: default/p, group: default/g, node: n, requests: {cpu: lots}, expiresAt: 1}\n",
            r"tfjobExtender\.reservations: malformed record",
            id="a reservation holding a bad quantity",
        ),
    ],
)
def test_a_bad_file_raises_snapshot_file_error_saying_where_and_why(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(text)
    with pytest.raises(SnapshotFileError, match=message):
        load_snapshot_file(ClusterState(), path)


def test_a_missing_file_raises_snapshot_file_error(tmp_path: Path) -> None:
    with pytest.raises(SnapshotFileError, match=r"nope\.yaml: .*No such file"):
        load_snapshot_file(ClusterState(), tmp_path / "nope.yaml")


def test_an_empty_file_is_an_empty_synced_cluster(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("")
    state = ClusterState()
    assert load_snapshot_file(state, path) == 0
    assert state.is_synced()
    assert len(state.snapshot().nodes) == 0


def test_loading_into_a_used_model_replaces_what_the_file_lacks(tmp_path: Path) -> None:
    state = cluster(make_node("old"), make_pod("stale"))
    path = tmp_path / "cluster.yaml"
    path.write_text(KUBECTL_LIST)
    load_snapshot_file(state, path)
    snapshot = state.snapshot()
    assert sorted(snapshot.nodes) == ["node-0"]
    assert sorted(snapshot.pods) == ["ml/mnist-worker-0"]


def test_the_dump_is_minimal_manifests(tmp_path: Path) -> None:
    dump = dump_state(rich_cluster().snapshot())
    assert dump["kind"] == "List"
    kinds = [item["kind"] for item in dump["items"]]
    assert kinds.count("Node") == 4
    assert kinds.count("PriorityClass") == 1
    pod: Obj = next(i for i in dump["items"] if i["kind"] == "Pod" and i["metadata"]["name"] == "init")
    # One container carrying the effective requests (init container max, overhead), minus the pods slot.
    assert pod["spec"]["containers"] == [
        {"name": "main", "resources": {"requests": {"cpu": "2100m", "memory": str(GI)}}}
    ]
    assert dump["tfjobExtender"]["generation"] > 0


def test_the_dump_in_pieces_is_the_dump() -> None:
    state = cluster(
        *(make_node(f"node-{i}") for i in range(5)),
        *tfjob_pods("mnist", ps=1, workers=6),
        make_podgroup("mnist", min_member=7),
        make_tfjob("mnist", workers=6),
    )
    snapshot = state.snapshot()
    pieces = list(dump_state_chunks(snapshot, 3))
    assert len(pieces) > 5
    assert orjson.loads(b"".join(pieces)) == orjson.loads(orjson.dumps(dump_state(snapshot)))


def expected_documents(dump: Obj) -> list[Obj]:
    return [*dump["items"], {"tfjobExtender": dump["tfjobExtender"]}]


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda dump: json.dumps(dump, indent=4), id="indented JSON"),
        pytest.param(lambda dump: json.dumps(dump), id="JSON on one line"),
        pytest.param(lambda dump: yaml.safe_dump(dump), id="YAML as kubectl writes it"),
        pytest.param(lambda dump: yaml.safe_dump(dump, indent=4, default_flow_style=None), id="YAML, other layout"),
        pytest.param(lambda dump: yaml.safe_dump(dump, default_flow_style=True), id="YAML flow style"),
        pytest.param(
            lambda dump: "# a comment\n---\n" + yaml.safe_dump(dump) + "...\n---\n" + yaml.safe_dump(dump["items"][0]),
            id="YAML documents with markers",
        ),
    ],
)
def test_documents_are_read_one_at_a_time_whatever_the_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, write: object
) -> None:
    """A small window of JSON text makes every item run past it at least once."""
    monkeypatch.setattr(json_documents, "JSON_CHUNK_CHARS", 64)
    dump = dump_state(rich_cluster().snapshot())
    dump["items"].insert(1, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"n": 12345}})
    path = tmp_path / "state.json"
    text = write(dump)  # type: ignore[operator]
    path.write_text(text)
    expected = expected_documents(dump)
    if "...\n---\n" in text:
        expected.append(dump["items"][0])
    assert manifests.read_documents(path) == expected


def test_a_yaml_list_keeps_items_separated_by_blank_lines_and_comments(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(
        "apiVersion: v1\nitems:\n# first\n- apiVersion: v1\n  kind: Node\n\n  metadata:\n    name: a\n"
        "-\n  apiVersion: v1\n  kind: Node\n  metadata: {name: b}\n  data: |\n    line one\n\n    line two\n"
        "kind: List\n"
    )
    documents = manifests.read_documents(path)
    assert [d.get("metadata", {}).get("name") for d in documents] == ["a", "b", None]
    assert documents[1]["data"] == "line one\n\nline two\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param('{"apiVersion": "v1", "items": [{"kind": "Node"} {"kind": "Pod"}]}', "expected ','", id="comma"),
        pytest.param('{"apiVersion": "v1", "items": [{"kind": "Node"}, {"kind": ', "not valid JSON", id="cut short"),
        pytest.param("[1, 2]", "document 1 is not a mapping", id="a JSON list"),
        pytest.param("apiVersion: v1\nitems:\n- a: [1\n- b: 2\nkind: List\n", "list item at line 3", id="bad item"),
    ],
)
def test_a_bad_file_read_one_item_at_a_time_says_where(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "cluster.json"
    path.write_text(text)
    with pytest.raises(SnapshotFileError, match=message):
        manifests.read_documents(path)


def test_a_file_streamed_into_an_empty_model_equals_one_replaced_into_a_used_one(tmp_path: Path) -> None:
    before = rich_cluster().snapshot()
    path = tmp_path / "state.json"
    path.write_text(json.dumps(dump_state(before)))
    streamed = ClusterState()
    load_snapshot_file(streamed, path)
    replaced = cluster(make_node("old"))
    load_snapshot_file(replaced, path)
    assert views(streamed.snapshot()) == views(replaced.snapshot()) == views(before)


SCALARS = """\
a: 1
b: 1.5
c: true
d: null
e: ~
f: ''
g: 2026-03-01T10:15:30Z
h: 0x1F
i: .inf
j: -.5e3
k: 'quoted'
l: "2"
m: [1, yes, No, off, 017, +1, 1e3, Y, ON]
n: !!str 3
o: &shared {p: 1}
q: *shared
r: {<<: *shared, s: 2}
t: 1_000
u:
v: 12:30:00
w: 2026-03-01
y: |
  text
"""


def test_list_items_read_the_same_as_with_the_safe_loader(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    item = "\n".join("  " + line for line in SCALARS.splitlines())
    path.write_text("apiVersion: v1\nitems:\n-" + item[1:] + "\nkind: List\n")
    assert manifests.read_documents(path)[0] == yaml.safe_load(SCALARS)
