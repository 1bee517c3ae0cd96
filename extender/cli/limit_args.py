"""The listeners' limits on the command line: one flag per `ListenerLimits` field and listener.

`--verb-FIELD` sets the verb listener's limit, `--observe-FIELD` an observe listener's (`serve
--observe-port`, or the one listener of `loops` and `scaler`); FIELD is the field's name with dashes
(`--verb-max-connections`, `--observe-head-timeout-s`). A flag not given keeps the listener's default
(`extender.config.VERB_LIMITS`, `OBSERVE_LIMITS`); `docs/hostile-input.md` says what each bounds.
"""

from __future__ import annotations

import argparse
from dataclasses import fields, replace
from typing import Any

from extender.config import ListenerLimits

LISTENERS = {"verb": "the verb listener", "observe": "the observe listener"}


def add_limit_arguments(parser: argparse.ArgumentParser, listener: str, defaults: ListenerLimits) -> None:
    """The flags of one listener's limits (`listener`: "verb" or "observe")."""
    group = parser.add_argument_group(f"limits of {LISTENERS[listener]} (docs/hostile-input.md)")
    for limit in fields(ListenerLimits):
        default = getattr(defaults, limit.name)
        group.add_argument(
            f"--{listener}-{limit.name.replace('_', '-')}",
            dest=f"{listener}_limit_{limit.name}",
            type=type(default),
            metavar=limit.name.rsplit("_", 1)[-1].upper() if limit.name.endswith(("_s", "_bytes")) else "N",
            help=f"(default {default})",
        )


def limits_from(args: argparse.Namespace, listener: str, defaults: ListenerLimits) -> ListenerLimits:
    """One listener's limits: its defaults with every flag given applied."""
    given: dict[str, Any] = {
        limit.name: value
        for limit in fields(ListenerLimits)
        if (value := getattr(args, f"{listener}_limit_{limit.name}", None)) is not None
    }
    return replace(defaults, **given)
