"""The `tfjob-extender` command: parse the arguments (`extender.cli.args`) and hand the subcommand to the
module that runs it — `extender.cli.serving` for `serve`, `extender.cli.loop_process` for `loops` and `scaler`,
the simulator, `explain`, `probe` and the dev cluster for theirs. The service's commands build their `Settings` first
(a wrong one stops the start with exit code 2) and log as those settings say. No policy lives here.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from extender import explain as explain_command
from extender import probe as probe_command
from extender import what_if as what_if_command
from extender.cli.args import SERVICE_COMMANDS, parse_args, settings_from
from extender.cli.logs import configure_logging
from extender.cli.loop_process import Loops, run_loops
from extender.cli.serving import serve
from extender.config import Settings, SettingsError
from extender.preflight import command as preflight_command
from extender.replay import command as replay_command
from extender.sim import cli as sim_cli


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command in SERVICE_COMMANDS:
        try:
            settings = settings_from(args)
        except SettingsError as error:
            sys.stderr.write(f"tfjob-extender: {error}\n")
            return 2
        configure_logging(settings.log_level, settings.log_format, settings.log_repeat_interval_s)
        if args.command == "serve":
            return serve(settings, settings.log_level)
        wanted = Loops(preemption=args.command == "loops", scaler=True)
        return run_loops(settings, settings.log_level, wanted)
    configure_logging(args.log_level, "text", Settings().log_repeat_interval_s)
    if args.command == "simulate":
        return sim_cli.run(args)
    if args.command == "dev-cluster":
        from extender.devcluster import cli as dev_cluster_cli

        return dev_cluster_cli.run(args)
    if args.command == "explain":
        return what_if_command.run(args) if args.what_if is not None else explain_command.run(args)
    if args.command == "probe":
        return probe_command.run(args)
    if args.command == "preflight":
        return preflight_command.run(args)
    if args.command == "replay":
        return replay_command.run(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
