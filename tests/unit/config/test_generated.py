"""What is generated from the settings' declarations stays equal to them: the chart's values schema, the
settings reference, and each command's `--help`; and the chart's values satisfy that schema without Helm."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from extender.__main__ import main
from extender.config.documents import settings_reference, values_schema
from extender.config.tree import COMMANDS, leaves
from tests.json_schema import problems

REPO = Path(__file__).resolve().parents[3]
CHART = REPO / "charts" / "tfjob-extender"
VALUES_SCHEMA = CHART / "values.schema.json"
REGENERATE = "run `.venv/bin/python hack/generate_settings.py`"


def squeezed(text: str) -> str:
    """`text` without any whitespace: argparse wraps help lines anywhere, a hyphenated word included."""
    return "".join(text.split())


def help_of(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    return capsys.readouterr().out


def test_the_values_schema_is_the_one_the_declarations_make() -> None:
    committed = VALUES_SCHEMA.read_text()
    assert json.dumps(values_schema(json.loads(committed)), indent=2) + "\n" == committed, REGENERATE


def test_the_settings_reference_is_the_one_the_declarations_make() -> None:
    assert (REPO / "docs" / "settings.md").read_text() == settings_reference(), REGENERATE


def test_the_charts_values_and_their_commented_examples_satisfy_the_schema() -> None:
    schema = json.loads(VALUES_SCHEMA.read_text())
    text = (CHART / "values.yaml").read_text()
    values = yaml.safe_load(text)
    assert problems(values, schema) == []
    for block in ("policy", "settings"):
        lines = text.splitlines()
        start = lines.index(f"{block}: {{}}")
        example = []
        for line in lines[start + 1 :]:
            if not line.startswith("#   "):
                break
            example.append(line.removeprefix("# ").split("  #")[0])
        shown = yaml.safe_load("\n".join(example))
        assert len(shown) >= 5, block
        assert problems({**values, block: shown}, schema) == [], block


def test_the_schema_refuses_what_the_processes_refuse() -> None:
    schema = json.loads(VALUES_SCHEMA.read_text())
    refused = problems(
        {
            "policy": {"starvation_limit_s": -1, "starving_hold": "wait", "starvation_limt_s": 1},
            "settings": {"verb_limits": {"max_body_bytes": 0}, "leader_election": {"identity": "one"}, "host": "x"},
        },
        schema,
    )
    assert sorted(refused) == [
        "/policy/starvation_limit_s: -1 fails minimum 0.0",
        "/policy/starvation_limt_s: not allowed",
        "/policy/starving_hold: 'wait' is not one of ['newcomers', 'block', 'steer']",
        "/settings/host: not allowed",
        "/settings/leader_election/identity: not allowed",
        "/settings/verb_limits/max_body_bytes: 0 fails minimum 1",
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_shows_every_setting_the_command_takes_with_its_declared_help(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = help_of(command, capsys)
    text = squeezed(printed)
    for leaf in leaves():
        if not leaf.taken_by(command):
            assert leaf.flag not in re.findall(r"--[a-z-]+", printed), f"{command} takes no {leaf.flag}"
            continue
        for flag in leaf.flags:
            assert squeezed(flag) in text, f"{command} {flag}"
        assert squeezed(leaf.declared.help) in text, f"{command} {leaf.path}"
        if not leaf.is_switch:
            assert squeezed(leaf.declared.rule.describe()) in text, f"{command} {leaf.path}"


@pytest.mark.parametrize("command", COMMANDS)
def test_every_flag_of_a_service_command_is_a_declared_setting(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    printed = help_of(command, capsys)
    listed = {
        option.split()[0]
        for line in printed.splitlines()
        if line.startswith("  -")
        for option in line.strip().split("  ")[0].split(", ")
        if option.startswith("--")
    }
    declared = {flag for leaf in leaves() if leaf.taken_by(command) for flag in (*leaf.flags, *leaf.aliases)}
    assert listed == declared | {"--help", "--config"}
