"""What each policy setting may be: one rule per field of `PolicySettings`.

A policy file (`--config`) is read through `POLICY_RULES` and the command line's flags are checked against
it, so a value out of range is refused at start, naming the setting and what it allows, instead of
misleading the policy. `policy_json_schema` is the same table as the JSON Schema the chart's
`values.schema.json` holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from extender.policy.core.settings import STARVING_HOLDS, PolicySettings
from extender.policy.core.views import NetworkLayer


class SettingValueError(ValueError):
    """A value a setting does not take; the message says what it takes."""


@dataclass(frozen=True, slots=True)
class Numbers:
    """A number from `low` to `high` (None: unbounded; `low_open`: `low` itself excluded), an integer when
    `integer`; always finite."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False

    def describe(self) -> str:
        return f"an integer, {self.span()}" if self.integer else self.span()

    def span(self) -> str:
        if self.low is not None and self.high is not None and not self.low_open:
            return f"{self.low:g} to {self.high:g}"
        bounds = [f"{'>' if self.low_open else '>='} {self.low:g}"] if self.low is not None else []
        bounds += [f"<= {self.high:g}"] if self.high is not None else []
        return " and ".join(bounds) or "any finite value"

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "integer" if self.integer else "number"}
        if self.low is not None:
            schema["exclusiveMinimum" if self.low_open else "minimum"] = self.low
        if self.high is not None:
            schema["maximum"] = self.high
        return schema

    def parse(self, value: object) -> int | float:
        kind = "an integer" if self.integer else "a number"
        if isinstance(value, bool) or not isinstance(value, int | float) or (self.integer and isinstance(value, float)):
            raise SettingValueError(f"{value!r} is not {kind} ({self.span()})")
        if not math.isfinite(value) or not self._within(value):
            raise SettingValueError(f"{value!r} is out of range ({self.span()})")
        return value if self.integer else float(value)

    def _within(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high


@dataclass(frozen=True, slots=True)
class Choices:
    """One of a few words."""

    values: tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(self.values)

    def json_schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)}

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or value not in self.values:
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value


@dataclass(frozen=True, slots=True)
class Switch:
    """true or false."""

    def describe(self) -> str:
        return "true or false"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def parse(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value


@dataclass(frozen=True, slots=True)
class Name:
    """A non-empty string without spaces (a Kubernetes name)."""

    def describe(self) -> str:
        return "a non-empty name without spaces"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": "^\\S+$"}

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or not value or any(character.isspace() for character in value):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value


@dataclass(frozen=True, slots=True)
class Layers:
    """Network layers, top first: a list of `{name: LAYER, labels: [LABEL, ...]}` with distinct names
    (an empty list: none). In `PolicySettings` they are `NetworkLayer`s."""

    def describe(self) -> str:
        return "a list of {name: LAYER, labels: [LABEL, ...]} with distinct names, top first ([] for none)"

    def json_schema(self) -> dict[str, Any]:
        text = {"type": "string", "pattern": "\\S"}
        layer = {
            "type": "object",
            "additionalProperties": False,
            "required": ["name", "labels"],
            "properties": {"name": text, "labels": {"type": "array", "minItems": 1, "items": text}},
        }
        return {"type": "array", "items": layer}

    def parse(self, value: object) -> tuple[NetworkLayer, ...]:
        if not isinstance(value, list | tuple):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        layers = tuple(self._layer(index, item) for index, item in enumerate(value, 1))
        names = [layer.name for layer in layers]
        if len(set(names)) != len(names):
            raise SettingValueError(f"layer names {names} repeat (expected {self.describe()})")
        return layers

    def _layer(self, index: int, item: object) -> NetworkLayer:
        if isinstance(item, NetworkLayer):
            item = {"name": item.name, "labels": list(item.label_keys)}
        if not isinstance(item, dict) or set(item) != {"name", "labels"}:
            raise SettingValueError(f"layer {index}: {item!r} is not {{name: LAYER, labels: [LABEL, ...]}}")
        name, labels = item["name"], item["labels"]
        if not isinstance(name, str) or not name.strip():
            raise SettingValueError(f"layer {index}: name {name!r} is not a non-empty string")
        if (
            not isinstance(labels, list | tuple)
            or not labels
            or not all(isinstance(label, str) and label.strip() for label in labels)
        ):
            raise SettingValueError(f"layer {index} ({name}): labels {labels!r} is not a non-empty list of label keys")
        return NetworkLayer(name, tuple(labels))


Rule = Numbers | Choices | Switch | Name | Layers

SHARE = Numbers(0.0, 1.0)
"""A fraction, 0 to 1."""
SECONDS = Numbers(0.0)
"""A duration in seconds, 0 or more."""
COUNT = Numbers(0, integer=True)
"""A count, 0 or more."""

POLICY_RULES: dict[str, Rule] = {
    "scheduler_name": Name(),
    "default_plan_timeout_s": Numbers(0.0, low_open=True),
    "max_score": Numbers(1, 10, integer=True),
    "colocation_weight": SHARE,
    "idleness_weight": SHARE,
    "colocation_ps_bonus": SHARE,
    "colocation_same_job": SHARE,
    "weight_scale": Numbers(0.0, low_open=True),
    "weight_offset": Numbers(),
    "weight_min_share": Numbers(0.0, 2.0, low_open=True),
    "default_weight": SHARE,
    "starvation_limit_s": SECONDS,
    "aging_rate_per_s": Numbers(0.0),
    "aging_max_weight": SHARE,
    "starving_backfill": Switch(),
    "starving_reservations": COUNT,
    "starving_hold": Choices(STARVING_HOLDS),
    "size_class_ratio": Numbers(0.0),
    "rank_gangs_checked": COUNT,
    "suspension_min_history": COUNT,
    "suspension_newcomer_s": SECONDS,
    "min_run_before_preemption_s": SECONDS,
    "max_suspensions_per_hour": COUNT,
    "suspension_history_jobs": Numbers(1, integer=True),
    "scale_out_step": COUNT,
    "scale_out_by_gain": Switch(),
    "scale_in_step": COUNT,
    "scale_cooldown_s": SECONDS,
    "consolidation_enabled": Switch(),
    "consolidation_budget": COUNT,
    "consolidation_interval_s": SECONDS,
    "defer_to_scheduler_gang_barrier": Switch(),
    "network_topology": Layers(),
}
"""What every field of `PolicySettings` takes (the keys are exactly its fields)."""

assert set(POLICY_RULES) == {f.name for f in fields(PolicySettings)}, "every setting has exactly one rule"


def policy_json_schema() -> dict[str, Any]:
    """`POLICY_RULES` as the JSON Schema of a policy file's settings, in the fields' order (what the chart's
    `values.schema.json` holds for its `policy:` block, so Helm refuses what the processes would)."""
    return {f.name: POLICY_RULES[f.name].json_schema() for f in fields(PolicySettings)}


def policy_from_mapping(values: Mapping[str, object], base: PolicySettings | None = None) -> PolicySettings:
    """`base` (the defaults when None) with the settings `values` names, each checked by its rule; an unknown
    name or a value its rule refuses raises `SettingValueError` naming the setting and what it takes."""
    unknown = sorted(str(key) for key in values if key not in POLICY_RULES)
    if unknown:
        raise SettingValueError(f"unknown key {unknown[0]!r} (allowed: {', '.join(POLICY_RULES)})")
    parsed: dict[str, Any] = {}
    for key, value in values.items():
        try:
            parsed[key] = POLICY_RULES[key].parse(value)
        except SettingValueError as error:
            raise SettingValueError(f"{key}: {error}") from None
    return replace(base or PolicySettings(), **parsed)


def policy_problems(settings: PolicySettings) -> dict[str, str]:
    """Setting → what is wrong with its value, for every setting its rule refuses (empty: all good)."""
    problems: dict[str, str] = {}
    for key, rule in POLICY_RULES.items():
        try:
            rule.parse(getattr(settings, key))
        except SettingValueError as error:
            problems[key] = str(error)
    return problems
