"""What every conversion shares: the error it raises, an object's identity and key, its creation time,
resource maps and pod requests, its annotations, and the memos that keep repeated values once.

`converted` runs a reader over one object and turns any `FieldError` into a `ConversionError` naming the
object; the other helpers raise `FieldError` with the field's path. `convert` (pods, nodes, PodGroups,
PriorityClasses) and `crds` (TFJobs, ClusterNetworkTopologies) build the views on them.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

from extender.policy.core.memo import by_value
from extender.policy.core.resources import PODS, QuantityError, Resources
from extender.policy.core.views import Role
from extender.state import fields
from extender.state.fields import FieldError, Json

RESOURCE_NAMES_MAX = 128
"""Distinct resources one requests / allocatable map may name (each becomes a column of the capacity table)."""
NON_NEGATIVE = (0, fields.INT32[1])

V = TypeVar("V")


class ConversionError(ValueError):
    """An object the model cannot read; the message names the object and the field."""


def identity(obj: Any) -> str:
    """`Kind namespace/name` for messages, from whatever the object holds (never raises)."""
    if not isinstance(obj, dict):
        return f"a {type(obj).__name__}, not an object"
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    kind, namespace, name = obj.get("kind"), meta.get("namespace"), meta.get("name", "<unnamed>")
    kind = kind if isinstance(kind, str) and kind.isidentifier() and len(kind) <= 63 else "object"
    name = name if isinstance(name, str) and name.isprintable() and len(name) <= 253 else fields.show(name)
    if namespace:
        namespace = namespace if isinstance(namespace, str) and namespace.isprintable() else fields.show(namespace)
        return f"{kind} {namespace[:63]}/{name}"
    return f"{kind} {name}"


def converted(obj: Any, read: Callable[[Json], V]) -> V:
    """`read(obj)`, any field error becoming a `ConversionError` that names the object."""
    if not isinstance(obj, dict):
        raise ConversionError(f"{identity(obj)}: not an object")
    try:
        return read(obj)
    except FieldError as error:
        raise ConversionError(f"{identity(obj)}: {error}") from None


def object_key(obj: Any, *, namespaced: bool = False) -> str:
    """`namespace/name`, or the plain name; a namespaced object without a namespace is in `default`."""
    return converted(obj, lambda o: key_of(o, namespaced))


def key_of(obj: Json, namespaced: bool) -> str:
    meta = fields.mapping(obj, "metadata", "metadata")
    name = meta.get("name")
    if not name:
        raise FieldError("metadata.name is missing")
    fields.path_segment(name, "metadata.name")
    if not namespaced:
        return str(name)
    return f"{fields.dns_label(meta.get('namespace') or 'default', 'metadata.namespace')}/{name}"


def pod_key(obj: Any) -> str:
    """`namespace/name` of a pod, as `PodView.key` spells it; "" for anything that is not a named pod."""
    try:
        return object_key(obj, namespaced=True)
    except ConversionError:
        return ""


def created_at(meta: Json) -> float:
    return fields.timestamp(meta.get("creationTimestamp"), "metadata.creationTimestamp")


def resources_of(quantities: Json, path: str) -> Resources:
    if len(quantities) > RESOURCE_NAMES_MAX:
        raise FieldError(f"{path} names {len(quantities)} resources (at most {RESOURCE_NAMES_MAX})")
    try:
        return Resources.parse({fields.qualified_name(name, path): value for name, value in quantities.items()})
    except QuantityError as error:
        raise FieldError(f"{path}: {error}") from None


_SHARED_REQUESTS: dict[Resources, Resources] = {}
_SHARED_REQUESTS_LIMIT = 4096
"""Distinct request bags shared across pods before the memo starts afresh (a cluster has a few hundred
shapes; a bound this low keeps what odd requests can leave behind to a few hundred KiB)."""


def shared(requests: Resources) -> Resources:
    """One object per distinct request bag: the pods of a cluster come in a few shapes, and a model of
    100 000 pods keeps a few hundred bags instead of 100 000 (Resources are immutable)."""
    return by_value(_SHARED_REQUESTS, requests, _SHARED_REQUESTS_LIMIT, lambda: requests)


def intern(text: str) -> str:
    """Names many objects repeat (namespaces, node names, phases, group and job keys) kept once."""
    return sys.intern(text)


def requests_of(spec: Json, path: str) -> Resources:
    """Effective requests: containers summed (limits standing in for absent requests), at least the
    largest init container, plus the pod overhead and one `pods` slot."""
    summed: dict[str, int] = {PODS: 1}
    for index, container in enumerate(fields.objects(spec, "containers", f"{path}containers")):
        for name, value in container_requests_of(container, f"{path}containers[{index}]").items():
            summed[name] = summed.get(name, 0) + value
    for index, container in enumerate(fields.objects(spec, "initContainers", f"{path}initContainers")):
        for name, value in container_requests_of(container, f"{path}initContainers[{index}]").items():
            summed[name] = max(summed.get(name, 0), value)
    if len(summed) > RESOURCE_NAMES_MAX:
        raise FieldError(f"{path}containers name {len(summed)} resources (at most {RESOURCE_NAMES_MAX})")
    return Resources(summed) + resources_of(fields.mapping(spec, "overhead", f"{path}overhead"), f"{path}overhead")


def container_requests_of(container: Json, path: str) -> Resources:
    resources = fields.mapping(container, "resources", f"{path}.resources")
    merged = dict(fields.mapping(resources, "limits", f"{path}.resources.limits"))
    merged.update(fields.mapping(resources, "requests", f"{path}.resources.requests"))
    return resources_of(merged, f"{path}.resources")


def annotation_of(meta: Json, key: str) -> Any:
    return fields.mapping(meta, "annotations", "metadata.annotations").get(key)


def role_of(value: str) -> Role:
    if not value:
        return Role.NONE
    try:
        return Role(value.lower())
    except ValueError:
        return Role.NONE
