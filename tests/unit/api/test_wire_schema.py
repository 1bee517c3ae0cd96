"""The JSON Schema of the wire (`docs/wire-schema.json`) is what the wire models generate."""

from __future__ import annotations

import json
from pathlib import Path

from extender.api import wire_models
from extender.api.wire_schema import VERBS, schema_text, wire_schema

REPO = Path(__file__).resolve().parents[3]
SCHEMA_FILE = REPO / "docs" / "wire-schema.json"


def test_the_committed_schema_is_what_the_models_generate() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == schema_text(), (
        "the models changed: python -m extender.api.wire_schema docs/wire-schema.json"
    )


def test_each_verb_names_its_request_and_reply_among_the_definitions() -> None:
    document = json.loads(schema_text())
    for verb, (request, reply) in VERBS.items():
        pair = document["x-verbs"][verb]
        assert pair == {
            "request": {"$ref": f"#/$defs/{request.__name__}"},
            "reply": {"$ref": f"#/$defs/{reply.__name__}"},
        }
    assert {"ExtenderArgs", "ExtenderFilterResult", "HostPriority", "MetaPod", "MetaVictims", "Victims"} <= set(
        document["$defs"]
    )


def test_every_field_is_described_under_its_wire_name() -> None:
    """Each property of every definition has a description and, as its title, the name it has on the wire."""
    for name, definition in wire_schema()["$defs"].items():
        for key, field in definition.get("properties", {}).items():
            assert field.get("description"), f"{name}.{key}"
            assert field["title"] == key, f"{name}.{key}"


def test_the_wire_names_are_the_go_field_names() -> None:
    args = wire_models.ExtenderPreemptionArgs.model_json_schema()
    assert list(args["properties"]) == ["Pod", "NodeNameToVictims", "NodeNameToMetaVictims"]
    assert list(wire_models.MetaVictims.model_json_schema()["properties"]) == ["Pods", "NumPDBViolations"]
    assert list(wire_models.MetaPod.model_json_schema()["properties"]) == ["UID"]


def test_a_map_keyed_by_node_name_constrains_every_key() -> None:
    failed = wire_schema()["$defs"]["ExtenderFilterResult"]["properties"]["FailedNodes"]["anyOf"][0]
    assert failed["propertyNames"]["pattern"] == wire_models.DNS_SUBDOMAIN_PATTERN
    assert failed["additionalProperties"] == {"type": "string"}
    assert "patternProperties" not in schema_text()
