"""The settings tree walked from its declarations: every settable leaf, the config file, the chart's schema.

`leaves()` lists every declared field under `Settings` as a `Leaf`: its dotted path (`verb_limits.max_body_bytes`),
its declaration, the group that holds it, its flag and its key in the config file. Everything that reads or
shows settings goes through that list, so a setting declared once is a flag, a file key and a chart value
at once, and none of them can be missed or named twice.

The config file (`--config`, YAML) is the tree with one exception kept from the policy files it grew out
of: the policy's keys sit at its top level (`starvation_limit_s: 900`); every other group is a section
named after its field (`preemption_loop: {interval_s: 5}`), and the root's own settings are top-level keys
too. Settings of one process (addresses, ports, credentials, modes: `in_file=False`) are refused there, by
name, with the flag that sets them. `build` makes the `Settings` from the values read, each group built
(and checked) on its own and then the root; a refusal names the setting's path.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from dataclasses import MISSING, Field, dataclass, fields, replace
from pathlib import Path
from typing import Any

import yaml

from extender.config.rules import GROUP, Group, SettingsError
from extender.config.settings import Settings
from extender.policy.core.setting_rules import Declared, SettingValueError, Switch, declared

COMMANDS = ("serve", "loops", "scaler")
"""The commands that take settings."""


@dataclass(frozen=True, slots=True)
class Leaf:
    """One declared setting of the tree."""

    path: str
    """Its attribute path from `Settings` (`policy.starvation_limit_s`)."""
    declared: Declared
    group: Group | None = None
    """The group that holds it; None: a field of `Settings` itself."""

    @property
    def name(self) -> str:
        return self.path.rpartition(".")[2]

    @property
    def section(self) -> str:
        """The group's field in `Settings` ("" for the root's own settings)."""
        return self.path.rpartition(".")[0]

    @property
    def in_file(self) -> bool:
        return self.declared.in_file and (self.group is None or self.group.in_file)

    @property
    def file_key(self) -> str:
        """Its key in the config file: its name in a flat group or at the root, else `section.name`."""
        return self.name if self.group is None or self.group.flat_in_file else self.path

    @property
    def flag(self) -> str:
        prefix = self.group.prefix if self.group is not None else ""
        return f"--{prefix}{self.declared.flag or self.name.replace('_', '-')}"

    @property
    def aliases(self) -> tuple[str, ...]:
        """Other names its flag answers to (`Group.aliases`)."""
        held = self.group.aliases if self.group is not None else ()
        return tuple(flag for name, flag in held if name == self.name)

    @property
    def off_flag(self) -> str:
        """A switch's flag that turns it off."""
        if self.declared.off_flag:
            return f"--{self.group.prefix if self.group is not None else ''}{self.declared.off_flag}"
        return "--no-" + self.flag.removeprefix("--")

    @property
    def is_switch(self) -> bool:
        return isinstance(self.declared.rule, Switch)

    @property
    def flags(self) -> tuple[str, ...]:
        """Its flags: a value's one; a switch's that turns it on and the one that turns it off, or only the one
        that departs from its default when the config file cannot set it (nothing to override)."""
        if not self.is_switch:
            return (self.flag,)
        if self.in_file:
            return (self.flag, self.off_flag)
        return (self.off_flag,) if self.default() else (self.flag,)

    def taken_by(self, command: str) -> bool:
        """Whether `command` has flags for it."""
        return all(not scope or command in scope for scope in (self.declared.commands, self._group_commands))

    def default(self, command: str = "") -> Any:
        """Its default (for `command`, where that command's differs)."""
        return dict(self.declared.command_defaults).get(command, value_at(DEFAULTS, self.path))

    @property
    def _group_commands(self) -> tuple[str, ...]:
        return self.group.commands if self.group is not None else ()


DEFAULTS = Settings()


def value_at(settings: Settings, path: str) -> Any:
    """The value at a dotted attribute path."""
    return functools.reduce(getattr, path.split("."), settings)


def _walk(settings_class: type, prefix: str, group: Group | None) -> Iterator[Leaf]:
    for item in fields(settings_class):
        path = prefix + item.name
        if (declaration := declared(item)) is not None:
            yield Leaf(path, declaration, group)
        elif isinstance(held := item.metadata.get(GROUP), Group):
            yield from _walk(type(_default_of(item)), path + ".", held)


def _default_of(item: Field[Any]) -> Any:
    return item.default_factory() if item.default_factory is not MISSING else item.default


@functools.cache
def leaves() -> tuple[Leaf, ...]:
    """Every declared setting of `Settings`, in field order."""
    return tuple(_walk(Settings, "", None))


@functools.cache
def groups() -> dict[str, Group]:
    """Each group's field in `Settings` → its `Group`."""
    return {leaf.section: leaf.group for leaf in leaves() if leaf.group is not None}


def load_config_file(path: Path) -> dict[str, Any]:
    """The settings a config file gives (leaf path → value), read and checked by their rules (every key
    optional; an empty file gives none). Raises `SettingsError` naming the file and the key."""
    try:
        values = yaml.safe_load(path.read_text())
    except OSError as error:
        raise SettingsError(f"config file {path}: cannot be read: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        where = getattr(error, "problem_mark", None)
        at = f" (line {where.line + 1}, column {where.column + 1})" if where is not None else ""
        problem = getattr(error, "problem", None) or "not valid YAML"
        raise SettingsError(f"config file {path}: not valid YAML{at}: {problem}") from None
    try:
        return values_from_file(values if values is not None else {})
    except SettingValueError as error:
        raise SettingsError(f"config file {path}: {error}") from None


def values_from_file(values: object) -> dict[str, Any]:
    """Leaf path → value of a config file's content (see the module's docstring); `SettingValueError` names the
    first key refused and why."""
    if not isinstance(values, Mapping):
        raise SettingValueError(f"expected a mapping of setting names to values, not {values!r:.80}")
    top = {leaf.file_key: leaf for leaf in leaves() if "." not in leaf.file_key}
    sections = {name for name, held in groups().items() if not held.flat_in_file}
    at_top = {key: value for key, value in values.items() if key not in sections}
    read = _entries(top, at_top, allowed=[*_in_file(top), *sorted(_file_sections())])
    for key, value in values.items():
        if key in sections:
            read |= _section(key, value)
    return read


def _section(section: str, values: object) -> dict[str, Any]:
    if not isinstance(values, Mapping):
        raise SettingValueError(f"{section}: expected a mapping of setting names to values, not {values!r:.80}")
    known = {leaf.name: leaf for leaf in leaves() if leaf.section == section}
    if not any(leaf.in_file for leaf in known.values()):
        raise SettingValueError(f"{section}: set by flags only, not by the config file")
    return _entries(known, values, allowed=_in_file(known))


def _entries(known: Mapping[str, Leaf], values: Mapping[Any, object], allowed: list[str]) -> dict[str, Any]:
    read: dict[str, Any] = {}
    for key, value in values.items():
        leaf = known.get(key)
        if leaf is None:
            raise SettingValueError(f"unknown key {key!r} (allowed: {', '.join(allowed)})")
        if not leaf.in_file:
            raise SettingValueError(f"{leaf.file_key}: set by its flag only ({leaf.flag}), not by the config file")
        try:
            read[leaf.path] = leaf.declared.rule.parse(value)
        except SettingValueError as error:
            raise SettingValueError(f"{leaf.file_key}: {error}") from None
    return read


def _in_file(known: Mapping[str, Leaf]) -> list[str]:
    return [key for key, leaf in known.items() if leaf.in_file]


def _file_sections() -> set[str]:
    return {
        leaf.section for leaf in leaves() if leaf.in_file and leaf.group is not None and not leaf.group.flat_in_file
    }


def build(values: Mapping[str, Any], base: Settings = DEFAULTS) -> Settings:
    """`base` with `values` (leaf path → a value its rule accepted): each group rebuilt with its values, then
    the root, so every check of every settings class runs; `SettingValueError` names the path refused."""
    by_section: dict[str, dict[str, Any]] = {}
    for path, value in values.items():
        section, _, name = path.rpartition(".")
        by_section.setdefault(section, {})[name] = value
    own = by_section.pop("", {})
    built = {}
    for section, given in by_section.items():
        try:
            built[section] = replace(getattr(base, section), **given)
        except SettingValueError as error:
            raise SettingValueError(f"{section}.{error}") from None
    return replace(base, **own, **built)


def shown(value: Any) -> str:
    """A default as `--help` and the settings reference show it ("" for none)."""
    if value is None or value == "" or value == ():
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, tuple):
        return ",".join(
            f"{item.name}={'+'.join(item.label_keys)}" if hasattr(item, "label_keys") else str(item) for item in value
        )
    return str(value)
