"""The policy settings on the command line: the policy file and the policy flags that override it.

`serve`, `loops` and `scaler` take the same policy file (`--config`, YAML mapping `PolicySettings` field
names to values) and the same policy flags (`add_policy_arguments`; the scaler's policy flags are added
with its other tuning in `extender.cli.args`). Every policy flag defaults to None, so a flag left out never
overrides the file; `policy_from` merges the two and checks the result against `POLICY_RULES`, raising
`SettingsError` with a one-line message that names the flag (`policy_flag`) or the file's key.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from extender.config import SettingsError, load_policy_file
from extender.policy.core.setting_rules import POLICY_RULES, policy_problems
from extender.policy.core.settings import STARVING_HOLDS, PolicySettings
from extender.policy.core.views import NetworkLayer

POLICY = PolicySettings()
"""The policy's defaults, quoted in the flags' help."""
INVERTED_POLICY_FLAGS = {
    "consolidation_enabled": "--no-consolidation",
    "defer_to_scheduler_gang_barrier": "--own-barrier-for-gated-gangs",
}
"""Policy settings whose flag turns them off (the others' flags are their names in kebab case)."""


def add_policy_arguments(parser: argparse.ArgumentParser) -> None:
    """The policy file and the policy flags, which `serve` and `loops` must be given alike (a flag given
    overrides the file; one left out does not): which pods are ours, starvation and what the room held for
    the starving gang at the head of its PriorityClass does to other gangs, the run-time history the
    preemption loop needs before it suspends a job, the network topology and who gates scheduling.k8s.io
    gangs."""
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="policy file: YAML mapping policy setting names (e.g. starvation_limit_s: 600) to values; "
        "give serve and loops the same one. Flags given explicitly override it",
    )
    parser.add_argument(
        "--scheduler-name", help=f"schedulerName of the pods to manage (default {POLICY.scheduler_name})"
    )
    parser.add_argument(
        "--starvation-limit-s",
        type=float,
        help="seconds a gang may wait before it starves and capacity is held for it "
        f"(default {POLICY.starvation_limit_s:g})",
    )
    parser.add_argument(
        "--starving-hold",
        choices=STARVING_HOLDS,
        help="which gangs that fit only in room held for a starving gang are kept out of it: the ones that "
        "arrived after it began to starve, until they starve (newcomers), all (block) or none (steer) "
        f"(default {POLICY.starving_hold})",
    )
    parser.add_argument(
        "--suspension-min-history",
        type=int,
        help="finished jobs whose run times must be known before a suspendable job is suspended for a fresh "
        f"gang (default {POLICY.suspension_min_history})",
    )
    parser.add_argument(
        "--suspension-newcomer-s",
        type=float,
        help="a suspendable job that started at most this many seconds ago may be suspended for a starving gang "
        "that outranks it: waiting after fit stays bounded under overload, at the cost of restarts "
        f"(default {POLICY.suspension_newcomer_s:g}; 0 turns it off)",
    )
    parser.add_argument(
        "--min-run-before-preemption-s",
        type=float,
        help="seconds a job runs, from the first binding of its current pods, before a preemption may evict, "
        "shrink or suspend it; a TFJob's annotation tfjob-extender.io/min-run-before-preemption-s overrides it; "
        "the newcomer suspension window opens when it ends "
        f"(default {POLICY.min_run_before_preemption_s:g}; 0 turns it off)",
    )
    parser.add_argument(
        "--max-suspensions-per-hour",
        type=int,
        help="the most times one TFJob may be suspended for another gang within any hour, counted from the "
        f"times written on the TFJob (default {POLICY.max_suspensions_per_hour}; 0: no bound)",
    )
    parser.add_argument(
        "--network-topology",
        type=network_layers,
        metavar="LAYER=LABEL,...",
        help="network layers, top first, used when the cluster has no ClusterNetworkTopology named default "
        "(default: spine, block, accelerator by NVIDIA topograph's labels; an empty string: none)",
    )
    parser.add_argument(
        "--own-barrier-for-gated-gangs",
        action="store_false",
        dest="defer_to_scheduler_gang_barrier",
        default=None,
        help="keep the extender's all-or-nothing barrier for scheduling.k8s.io gang PodGroups too (for a "
        "kube-scheduler running without the GenericWorkload feature gate; default: leave it to kube-scheduler)",
    )


def network_layers(text: str) -> tuple[NetworkLayer, ...]:
    """`SpineLayer=network.topology.nvidia.com/spine,BlockLayer=...`: layer=label pairs, top first."""
    layers = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, _, label = item.partition("=")
        if not name or not label:
            raise argparse.ArgumentTypeError(f"{item!r} is not LAYER=LABEL")
        layers.append(NetworkLayer(name, (label,)))
    return tuple(layers)


def policy_flag(setting: str) -> str:
    """The command-line flag of a policy setting."""
    return INVERTED_POLICY_FLAGS.get(setting, "--" + setting.replace("_", "-"))


def policy_from(args: argparse.Namespace) -> PolicySettings:
    """The policy file's settings (the defaults without one), with the policy flags given explicitly on top;
    `SettingsError` when the file or a flag gives a value a setting does not take."""
    config: Path | None = getattr(args, "config", None)
    policy = load_policy_file(config) if config is not None else PolicySettings()
    flags = {key: value for key in POLICY_RULES if (value := getattr(args, key, None)) is not None}
    policy = replace(policy, **flags)
    for key, problem in policy_problems(policy).items():
        raise SettingsError(f"{policy_flag(key)}: {problem}" if key in flags else f"{key}: {problem}")
    return policy
