"""A JSON Schema (draft 7) checker for the keywords the chart's `values.schema.json` uses, for the tests that
run without Helm. A keyword it does not know is an error, never skipped, so it cannot pass a schema it does
not understand."""

from __future__ import annotations

import re
from typing import Any

TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}
ANNOTATIONS = {"$schema", "title", "description"}


def problems(value: Any, schema: dict[str, Any], at: str = "") -> list[str]:
    """What in `value` the schema refuses, each `path: reason` (empty: valid)."""
    found: list[str] = []
    for keyword, rule in schema.items():
        if keyword in ANNOTATIONS:
            continue
        check = CHECKS.get(keyword)
        if check is None:
            raise ValueError(f"{at or '/'}: the schema keyword {keyword!r} is not known to this checker")
        found += check(value, rule, schema, at)
    return found


def _type(value: Any, rule: str | list[str], _: dict[str, Any], at: str) -> list[str]:
    names = [rule] if isinstance(rule, str) else rule
    ok = any(isinstance(value, TYPES[name]) and not (isinstance(value, bool) and name != "boolean") for name in names)
    return [] if ok else [f"{at}: {value!r} is not of type {rule}"]


def _properties(value: Any, rule: dict[str, Any], _: dict[str, Any], at: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    return [p for key, each in value.items() if key in rule for p in problems(each, rule[key], f"{at}/{key}")]


def _additional(value: Any, rule: bool | dict[str, Any], schema: dict[str, Any], at: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    extra = [key for key in value if key not in schema.get("properties", {})]
    if rule is False:
        return [f"{at}/{key}: not allowed" for key in extra]
    if rule is True:
        return []
    return [p for key in extra for p in problems(value[key], rule, f"{at}/{key}")]


def _items(value: Any, rule: dict[str, Any], _: dict[str, Any], at: str) -> list[str]:
    return (
        [p for index, item in enumerate(value) for p in problems(item, rule, f"{at}/{index}")]
        if isinstance(value, list)
        else []
    )


def _number(name: str, holds: Any) -> Any:
    def check(value: Any, rule: float, _: dict[str, Any], at: str) -> list[str]:
        if isinstance(value, bool) or not isinstance(value, int | float) or holds(value, rule):
            return []
        return [f"{at}: {value!r} fails {name} {rule!r}"]

    return check


def _size(name: str, kind: type[str] | type[list[Any]], holds: Any) -> Any:
    def check(value: Any, rule: int, _: dict[str, Any], at: str) -> list[str]:
        sized: Any = value
        return (
            [f"{at}: {value!r} fails {name} {rule}"] if isinstance(value, kind) and not holds(len(sized), rule) else []
        )

    return check


CHECKS: dict[str, Any] = {
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "items": _items,
    "required": lambda value, rule, _, at: [
        f"{at}/{key}: required" for key in rule if isinstance(value, dict) and key not in value
    ],
    "enum": lambda value, rule, _, at: [] if value in rule else [f"{at}: {value!r} is not one of {rule}"],
    "pattern": lambda value, rule, _, at: (
        [] if not isinstance(value, str) or re.search(rule, value) else [f"{at}: {value!r} does not match {rule}"]
    ),
    "minimum": _number("minimum", lambda value, rule: value >= rule),
    "maximum": _number("maximum", lambda value, rule: value <= rule),
    "exclusiveMinimum": _number("exclusiveMinimum", lambda value, rule: value > rule),
    "minLength": _size("minLength", str, lambda size, rule: size >= rule),
    "maxLength": _size("maxLength", str, lambda size, rule: size <= rule),
    "minItems": _size("minItems", list, lambda size, rule: size >= rule),
}
