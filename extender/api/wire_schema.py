"""The extender wire as one JSON Schema document, generated from `wire_models`: `docs/wire-schema.json`.

Every model is under `$defs`, in the form a reader validates (a field with a default may be absent), and
`x-verbs` names each verb's request and reply. `schema_text` is what the committed file holds, and a unit
test compares the two, so the document cannot drift from the models; `python -m extender.api.wire_schema
docs/wire-schema.json` writes it again after a model changes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaMode, JsonSchemaValue, models_json_schema
from pydantic_core import core_schema

from extender.api.wire_models import (
    ExtenderArgs,
    ExtenderBindingArgs,
    ExtenderBindingResult,
    ExtenderFilterResult,
    ExtenderPreemptionArgs,
    ExtenderPreemptionResult,
    HostPriorityList,
)

VERBS: dict[str, tuple[type[BaseModel], type[BaseModel]]] = {
    "filter": (ExtenderArgs, ExtenderFilterResult),
    "prioritize": (ExtenderArgs, HostPriorityList),
    "preempt": (ExtenderPreemptionArgs, ExtenderPreemptionResult),
    "bind": (ExtenderBindingArgs, ExtenderBindingResult),
}
"""Verb → (request, reply), as kube-scheduler POSTs `<urlPrefix>/<verb>` and decodes the 200 reply."""
TITLE = "kube-scheduler HTTP extender wire (k8s.io/kube-scheduler/extender/v1)"
DESCRIPTION = (
    "The JSON kube-scheduler sends to an extender and accepts back, as tfjob-extender reads and writes it. "
    "The extender types carry no JSON tags, so their keys are the Go field names (PascalCase); Kubernetes "
    "objects inside keep their camelCase keys. Requests carry every key, null when unset; kube-scheduler "
    "decodes replies with Go's encoding/json: keys matched case-insensitively, unknown keys ignored. Every "
    "reply is an HTTP 200. Generated from extender/api/wire_models.py by extender/api/wire_schema.py."
)


class WireJsonSchema(GenerateJsonSchema):
    """Pydantic's JSON Schema, with a map keyed by node name refusing every other key: the key pattern
    goes to `propertyNames`, not to `patternProperties` (which would leave keys of another form unchecked)."""

    def dict_schema(self, schema: core_schema.DictSchema) -> JsonSchemaValue:
        json_schema = super().dict_schema(schema)
        by_pattern = json_schema.pop("patternProperties", None)
        if by_pattern:
            [(pattern, values)] = by_pattern.items()
            json_schema["propertyNames"] = {**json_schema.get("propertyNames", {}), "pattern": pattern}
            json_schema["additionalProperties"] = values
        return json_schema


def wire_schema() -> dict[str, Any]:
    """The document: every request and reply type under `$defs`, each verb's pair under `x-verbs`."""
    mode: JsonSchemaMode = "validation"
    models = sorted({model for pair in VERBS.values() for model in pair}, key=lambda model: model.__name__)
    refs, document = models_json_schema(
        [(model, mode) for model in models], title=TITLE, description=DESCRIPTION, schema_generator=WireJsonSchema
    )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **_unwrapped(document),
        "x-verbs": {
            verb: {"request": refs[(request, mode)], "reply": refs[(reply, mode)]}
            for verb, (request, reply) in VERBS.items()
        },
    }


def _unwrapped(schema: Any) -> Any:
    """`schema` with every description on one line (a model's description is its docstring, wrapped)."""
    if isinstance(schema, list):
        return [_unwrapped(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: " ".join(value.split("\n")) if key == "description" and isinstance(value, str) else _unwrapped(value)
        for key, value in schema.items()
    }


def schema_text() -> str:
    """The document as the committed file holds it."""
    return json.dumps(wire_schema(), indent=2, ensure_ascii=False) + "\n"


def write_schema(path: Path) -> None:
    path.write_text(schema_text(), encoding="utf-8")


if __name__ == "__main__":
    write_schema(Path(sys.argv[1]))
