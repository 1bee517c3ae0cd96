"""The settings vocabulary of the service beyond the policy's: strings, paths, lists of words, and groups.

The policy's rules (`policy.core.setting_rules`: numbers with units and ranges, choices, switches, names,
network layers) declare most settings; a process also takes addresses, file paths and repeated words,
which the policy never reads, so their rules live here, beside the `Group` that gathers a settings object
into its parent (`Settings.verb_limits`, `Settings.policy`, ...) and says how its settings are named on the
command line and in the config file. `SettingsError` is what the program stops with when the settings are
wrong: one line naming the flag, or the file and its key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from extender.policy.core.setting_rules import SettingValueError

GROUP = "tfjob-extender.settings-group"
"""The key of a field's `Group` in its metadata."""


class SettingsError(ValueError):
    """Settings the process cannot start with; the message is one line naming what to change."""


@dataclass(frozen=True, slots=True)
class Text:
    """Any string (`non_empty`: not ""); `optional`: None too (left unset)."""

    non_empty: bool = False
    optional: bool = False
    metavar: str = "TEXT"

    def describe(self) -> str:
        return "a non-empty string" if self.non_empty else "a string"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1} if self.non_empty else {"type": "string"}

    def parse(self, value: object) -> str | None:
        if value is None and self.optional:
            return None
        if not isinstance(value, str) or (self.non_empty and not value):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return value

    def from_text(self, text: str) -> str:
        return text


@dataclass(frozen=True, slots=True)
class FilePath:
    """The path of a file, or None (not given)."""

    metavar: str = "FILE"

    def describe(self) -> str:
        return "a file's path"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string", "minLength": 1}

    def parse(self, value: object) -> Path | None:
        if value is None or isinstance(value, Path):
            return value
        if not isinstance(value, str) or not value:
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return Path(value)

    def from_text(self, text: str) -> Path:
        return Path(text)


@dataclass(frozen=True, slots=True)
class Words:
    """Non-empty strings, in order; on the command line one flag each, repeated."""

    metavar: str = "WORD"

    def describe(self) -> str:
        return "non-empty strings; repeat the flag for each"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": {"type": "string", "minLength": 1}}

    def parse(self, value: object) -> tuple[str, ...]:
        if not isinstance(value, list | tuple) or not all(isinstance(word, str) and word for word in value):
            raise SettingValueError(f"{value!r} is not {self.describe()}")
        return tuple(value)

    def from_text(self, text: str) -> str:
        return text


@dataclass(frozen=True, slots=True)
class Group:
    """A settings object held by its parent's field: how its settings are named and where they may be set."""

    title: str
    """What it is, for `--help` and the settings reference."""
    prefix: str = ""
    """Put before each of its flags' names (`observe-`: `--observe-max-connections`)."""
    in_file: bool = True
    """False: set by flags only (settings of one process), never by the shared config file."""
    flat_in_file: bool = False
    """Its keys sit at the top level of the config file, not in a section named after the field (the
    policy's, as policy files have always been written)."""
    commands: tuple[str, ...] = ()
    """The commands that take its flags; (): every one that takes settings."""
    aliases: tuple[tuple[str, str], ...] = ()
    """(field, flag): another name a field's flag also answers to, kept from an earlier release."""


def group(default: Callable[[], Any], title: str, **declared: Any) -> Any:
    """A dataclass field holding a settings object made by `default`, with its `Group` (keywords are
    `Group`'s)."""
    return field(default_factory=default, metadata={GROUP: Group(title, **declared)})
