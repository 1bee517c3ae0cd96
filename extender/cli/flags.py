"""The settings' flags, generated from their declarations, and the `Settings` the command line makes.

`add_settings_flags` gives a command (`serve`, `loops`, `scaler`) one flag per setting it takes
(`config.tree.leaves`), grouped as `Settings` groups them, each with the declared help, what it takes and its
default; `--config FILE` reads the config file. No flag here is written by hand, so `--help`, the file and
the chart's schema say the same. Every flag's default is "not given": a flag left out never overrides the
file. `settings_from` reads the file, puts the flags given on top, checks each value by its rule (naming the
flag, or the file and its key) and builds the `Settings`; `SettingsError` says what to change, in one line.
"""

from __future__ import annotations

import argparse
import os
import socket
import uuid
from pathlib import Path
from typing import Any

from extender.config import Settings, SettingsError
from extender.config.rules import Words
from extender.config.tree import Leaf, build, groups, leaves, load_config_file, shown
from extender.policy.core.setting_rules import Namespaces, Rule, SettingValueError

IDENTITY = "leader_election.identity"
"""The setting filled with `default_identity()` when not given."""


def add_settings_flags(parser: argparse.ArgumentParser, command: str) -> None:
    """`--config` and the flag of every setting `command` takes."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="config file: YAML, the policy's settings at its top level, the other groups in sections "
        "(docs/settings.md); give serve and loops the same one. Flags given explicitly override it",
    )
    sections: dict[str, Any] = {"": parser}
    for leaf in leaves():
        if not leaf.taken_by(command):
            continue
        if leaf.section not in sections:
            sections[leaf.section] = parser.add_argument_group(groups()[leaf.section].title)
        _add_flags(sections[leaf.section], leaf, command)


def _add_flags(parser: Any, leaf: Leaf, command: str) -> None:
    rule = leaf.declared.rule
    default = leaf.default(command)
    if leaf.is_switch:
        for flag in leaf.flags:
            turns_on = flag == leaf.flag
            help_line = _switch_help(leaf, turns_on=turns_on)
            parser.add_argument(
                flag, dest=leaf.path, action="store_const", const=turns_on, default=argparse.SUPPRESS, help=help_line
            )
        return
    parser.add_argument(
        leaf.flag,
        *leaf.aliases,
        dest=leaf.path,
        type=_reader(rule),
        action="append" if isinstance(rule, Words | Namespaces) else "store",
        metavar=rule.metavar or None,
        default=argparse.SUPPRESS,
        help=_escaped(
            f"{leaf.declared.help} ({rule.describe()}{f'; default {shown(default)}' if shown(default) else ''})"
        ),
    )


def _switch_help(leaf: Leaf, *, turns_on: bool) -> str:
    if turns_on:
        return _escaped(f"{leaf.declared.help} (default {'on' if leaf.default() else 'off'})")
    if leaf.in_file:
        return f"the opposite of {leaf.flag}"
    return _escaped(f"off: {leaf.declared.help}")


def _escaped(text: str) -> str:
    return text.replace("%", "%%")


def _reader(rule: Rule) -> Any:
    def read(text: str) -> Any:
        try:
            return rule.from_text(text)
        except SettingValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return read


def settings_from(args: argparse.Namespace) -> Settings:
    """The settings of `serve`, `loops` or `scaler`: the config file's (`--config`), the flags given on top,
    the command's own defaults where neither gives one; `SettingsError` (a one-line reason) when wrong."""
    config: Path | None = getattr(args, "config", None)
    values = load_config_file(config) if config is not None else {}
    given = vars(args)
    for leaf in leaves():
        if leaf.path in given:
            values[leaf.path] = _flag_value(leaf, given[leaf.path])
        elif leaf.path not in values and leaf.declared.command_defaults:
            values[leaf.path] = leaf.default(args.command)
    if not values.get(IDENTITY):
        values[IDENTITY] = default_identity()
    try:
        return build(values)
    except SettingValueError as error:
        raise SettingsError(str(error)) from None


def _flag_value(leaf: Leaf, value: Any) -> Any:
    try:
        return leaf.declared.rule.parse(value)
    except SettingValueError as error:
        raise SettingsError(f"{leaf.flag}: {error}") from None


def default_identity() -> str:
    """This instance's name in the Lease when none is given: host name, process id, a random suffix."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
