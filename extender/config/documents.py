"""What the settings' declarations print: the chart's values schema for them, and the settings reference.

The chart renders its values `policy` and `settings` into the config file both processes read, so the
schema Helm checks them with is made here, from the same declarations the processes read the file by
(`config.tree`): Helm refuses a misspelt key or a value out of range at install, with the key's name, as
the processes would at start. `docs/settings.md` is `settings_reference()`: every setting with its flag,
file key, unit, range, default and help. `hack/generate_settings.py` writes both; unit tests compare them
with these functions, so neither drifts from the declarations.
"""

from __future__ import annotations

from typing import Any

from extender.config.tree import COMMANDS, Leaf, groups, leaves, shown

POLICY = "policy"
"""The group whose keys sit at the config file's top level, and the chart's value that holds them."""


def leaf_schema(leaf: Leaf) -> dict[str, Any]:
    """One setting's JSON Schema, with its help and what it takes as its description."""
    return {
        **leaf.declared.rule.json_schema(),
        "description": f"{leaf.declared.help} ({leaf.declared.rule.describe()})",
    }


def chart_policy_schema() -> dict[str, Any]:
    """The schema of the chart's `policy` value: the policy's settings, flat."""
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "The policy's settings, the config file's top-level keys (docs/settings.md).",
        "properties": {leaf.name: leaf_schema(leaf) for leaf in leaves() if leaf.section == POLICY},
    }


def chart_settings_schema() -> dict[str, Any]:
    """The schema of the chart's `settings` value: every other setting the config file takes, the root's at
    the top level and each group's in its section."""
    properties: dict[str, Any] = {}
    for leaf in leaves():
        if not leaf.in_file or leaf.section == POLICY:
            continue
        if not leaf.section:
            properties[leaf.name] = leaf_schema(leaf)
            continue
        section = properties.setdefault(
            leaf.section,
            {
                "type": "object",
                "additionalProperties": False,
                "description": groups()[leaf.section].title,
                "properties": {},
            },
        )
        section["properties"][leaf.name] = leaf_schema(leaf)
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "The config file's settings beyond the policy, by section (docs/settings.md).",
        "properties": properties,
    }


def values_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The chart's `values.schema.json` (`schema`) with its `policy` and `settings` values' schemas made from
    the declarations (`settings` right after `policy`); every other value's schema kept as it is."""
    properties: dict[str, Any] = {}
    for name, value in schema["properties"].items():
        if name == "settings":
            continue
        properties[name] = chart_policy_schema() if name == POLICY else value
        if name == POLICY:
            properties["settings"] = chart_settings_schema()
    return {**schema, "properties": properties}


def settings_reference() -> str:
    """`docs/settings.md`: every setting, group by group, as a Markdown table."""
    lines = [
        "# Settings",
        "",
        "Every setting of `tfjob-extender serve`, `loops` and `scaler`: its flag, its key in the config file",
        "(`--config FILE`; the chart's values `policy` and `settings`), what it takes and its default. Flags",
        "given on the command line override the file. A setting marked *flag only* belongs to one process (an",
        "address, a credential, a mode) and is never read from the file both processes share. Generated from",
        "the settings' declarations by `hack/generate_settings.py`; a unit test keeps it equal to them.",
    ]
    for title, members in _by_group():
        lines += [
            "",
            f"## {title}",
            "",
            "| file key | flag | takes | default | what |",
            "| --- | --- | --- | --- | --- |",
        ]
        lines += [_row(leaf) for leaf in members]
    return "\n".join(lines) + "\n"


def _by_group() -> list[tuple[str, list[Leaf]]]:
    order: dict[str, list[Leaf]] = {}
    for leaf in leaves():
        order.setdefault(leaf.section, []).append(leaf)
    titled = [("The process", order.pop(""))]
    return titled + [(f"{groups()[section].title} (`{section}`)", members) for section, members in order.items()]


def _row(leaf: Leaf) -> str:
    key = f"`{leaf.file_key}`" if leaf.in_file else "*flag only*"
    commands = [command for command in COMMANDS if leaf.taken_by(command)]
    only = "" if len(commands) == len(COMMANDS) else f" ({', '.join(commands)})"
    default = f"`{shown(leaf.default())}`" if shown(leaf.default()) else "—"
    default += "".join(f"; {command}: `{shown(value)}`" for command, value in leaf.declared.command_defaults)
    flags = " ".join(f"`{flag}`" for flag in (*leaf.flags, *leaf.aliases)) + only
    cells = [key, flags, leaf.declared.rule.describe(), default]
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in [*cells, leaf.declared.help]) + " |"
