"""The one declaration of a setting: what it takes, what it is for, how it is named; and the one check of it.

Every settings class of the program (`PolicySettings` here; `Settings` and its groups in `extender.config`;
the loops' `PreemptionLoopSettings` and `ScalerLoopSettings`) is a frozen dataclass whose fields are declared
with `setting(default, RULE, "help")`: the field's type and default are the dataclass's, and the field's
metadata holds a `Declared` — its rule (the type's range, unit or choices), its one-line help, its flag's
name where that is not the field's own, whether the config file may give it, and another field it may
not be given with. Everything else is generated from these declarations by the code that needs it: the
command-line flags and their help (`extender.cli.flags`), the config file's reader (`extender.config.tree`),
the chart's JSON Schema and the settings reference, `docs/settings.md` (`extender.config.documents`).

Why stdlib dataclasses and rules of our own rather than pydantic models: the policy is pure (it imports the
standard library and numpy only), so its declarations must be readable without pydantic, and the policy
reads a plain frozen dataclass. A pydantic model built from these declarations would hold every constraint
a second time and answer with its own messages, which would have to be translated back into the
declaration's words; a rule here checks, describes and prints its JSON Schema in a dozen lines, and the
same rules serve every settings class, so there is one vocabulary and one check.

`check_declared` is that one check: each settings class calls it from `__post_init__`, so no settings object
the program holds has a value its declaration refuses. A refusal is a `SettingValueError` whose message is
one line naming the field and what it takes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import Field, dataclass, field, fields
from typing import Any, Protocol

from extender.policy.core.views import NetworkLayer

DECLARED = "tfjob-extender.setting"
"""The key of a field's `Declared` in its metadata."""


class SettingValueError(ValueError):
    """A value a setting does not take; the message says what it takes."""


class Rule(Protocol):
    """What a setting takes: `parse` checks a value (from a file or a built object) and returns it typed,
    `from_text` reads a flag's text, `describe` and `json_schema` say what it takes to a person and to Helm,
    `metavar` names a flag's value in `--help`."""

    @property
    def metavar(self) -> str: ...

    def describe(self) -> str: ...

    def json_schema(self) -> dict[str, Any]: ...

    def parse(self, value: object) -> Any: ...

    def from_text(self, text: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class Numbers:
    """A number from `low` to `high` (None: unbounded; `low_open`: `low` itself excluded), an integer when
    `integer`; always finite. `unit` names what it counts (seconds, bytes, a share of 0..1, ...)."""

    low: float | None = None
    high: float | None = None
    integer: bool = False
    low_open: bool = False
    unit: str = ""

    @property
    def metavar(self) -> str:
        return (self.unit or ("N" if self.integer else "NUMBER")).upper().replace(" ", "_")

    def describe(self) -> str:
        span = f"an integer, {self.span()}" if self.integer else self.span()
        return f"{self.unit}, {span}" if self.unit else span

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

    def from_text(self, text: str) -> int | float:
        try:
            return int(text) if self.integer else float(text)
        except ValueError:
            raise SettingValueError(f"{text!r} is not {'an integer' if self.integer else 'a number'}") from None

    def _within(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return self.high is None or value <= self.high


@dataclass(frozen=True, slots=True)
class Choices:
    """One of a few words."""

    values: tuple[str, ...]

    @property
    def metavar(self) -> str:
        return "{" + ",".join(self.values) + "}"

    def describe(self) -> str:
        return "one of " + ", ".join(self.values)

    def json_schema(self) -> dict[str, Any]:
        return {"enum": list(self.values)}

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or value not in self.values:
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value

    def from_text(self, text: str) -> str:
        return text


@dataclass(frozen=True, slots=True)
class Switch:
    """true or false; on the command line a flag that turns it on and one that turns it off."""

    metavar = ""

    def describe(self) -> str:
        return "true or false"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}

    def parse(self, value: object) -> bool:
        if not isinstance(value, bool):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value

    def from_text(self, text: str) -> bool:
        raise SettingValueError(f"{text!r}: a switch takes no value")


@dataclass(frozen=True, slots=True)
class Name:
    """A non-empty string without spaces (a Kubernetes name)."""

    metavar = "NAME"

    def describe(self) -> str:
        return "a non-empty name without spaces"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": "^\\S+$"}

    def parse(self, value: object) -> str:
        if not isinstance(value, str) or not value or any(character.isspace() for character in value):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value

    def from_text(self, text: str) -> str:
        return text


@dataclass(frozen=True, slots=True)
class Namespaces:
    """Namespace names (DNS labels), in order, none meaning every namespace; on the command line one flag
    each, repeated."""

    metavar: str = "NAMESPACE"

    def describe(self) -> str:
        return "namespace names, none for every namespace; repeat the flag for each"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string", "pattern": DNS_LABEL_PATTERN}}

    def parse(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(
            isinstance(name, str) and is_dns_label(name) for name in value
        ):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return tuple(value)

    def from_text(self, text: str) -> str:
        return text


DNS_LABEL_PATTERN = "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
"""A DNS-1123 label: a namespace's name, or a Service's."""


def is_dns_label(name: str) -> bool:
    return re.fullmatch(DNS_LABEL_PATTERN, name) is not None


@dataclass(frozen=True, slots=True)
class Layers:
    """Network layers, top first: a list of `{name: LAYER, labels: [LABEL, ...]}` with distinct names
    (an empty list: none). In `PolicySettings` they are `NetworkLayer`s. On the command line
    `LAYER=LABEL,...` (one label a layer; an empty string: none)."""

    metavar = "LAYER=LABEL,..."

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

    def from_text(self, text: str) -> tuple[NetworkLayer, ...]:
        layers = []
        for item in filter(None, (part.strip() for part in text.split(","))):
            name, _, label = item.partition("=")
            if not name or not label:
                raise SettingValueError(f"{item!r} is not LAYER=LABEL")
            layers.append(NetworkLayer(name, (label,)))
        return tuple(layers)

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


SHARE = Numbers(0.0, 1.0, unit="share")
"""A fraction, 0 to 1."""
SECONDS = Numbers(0.0, unit="seconds")
"""A duration in seconds, 0 or more."""
POSITIVE_SECONDS = Numbers(0.0, low_open=True, unit="seconds")
"""A duration in seconds, above 0."""
COUNT = Numbers(0, integer=True, unit="count")
"""A count, 0 or more."""


@dataclass(frozen=True, slots=True)
class Declared:
    """A field's declaration, in its metadata under `DECLARED` (see the module's docstring)."""

    rule: Rule
    help: str
    """One line: what the setting does, for `--help`, the chart's schema and the settings reference."""
    flag: str = ""
    """The flag's name without `--` and its group's prefix; "": the field's name in kebab case."""
    off_flag: str = ""
    """A switch's flag that turns it off; "": `no-` and `flag`."""
    in_file: bool = True
    """False: a setting of one process (an address, a credential, a mode), given by a flag only, never by
    the config file two processes share."""
    commands: tuple[str, ...] = ()
    """The commands whose flags set it; (): every command that takes its group."""
    command_defaults: tuple[tuple[str, Any], ...] = ()
    """(command, default) where a command's default differs from the field's."""
    excludes: str = ""
    """A field of the same object that may not be given (not None) together with this one."""


def setting(default: Any, rule: Rule, help: str, **declared: Any) -> Any:
    """A dataclass field with `default` and its declaration (the keywords are `Declared`'s)."""
    return field(default=default, metadata={DECLARED: Declared(rule, help, **declared)})


def declared(item: Field[Any]) -> Declared | None:
    """The declaration of a dataclass field; None when it has none (a group of settings, or no setting)."""
    found = item.metadata.get(DECLARED)
    return found if isinstance(found, Declared) else None


def declarations(settings: Any) -> Iterator[tuple[str, Declared]]:
    """(field name, declaration) of every declared field of a settings class or object, in field order."""
    for item in fields(settings):
        if (declaration := declared(item)) is not None:
            yield item.name, declaration


def check_declared(settings: object) -> None:
    """Raise `SettingValueError` ("FIELD: what it takes") for the first field of `settings` whose value its
    declaration refuses: by its rule, or given together with its `excludes`."""
    for name, declaration in declarations(settings):
        value = getattr(settings, name)
        try:
            declaration.rule.parse(value)
        except SettingValueError as error:
            raise SettingValueError(f"{name}: {error}") from None
        if declaration.excludes and value is not None and getattr(settings, declaration.excludes) is not None:
            raise SettingValueError(f"{name}: not together with {declaration.excludes} (give one of them)")
