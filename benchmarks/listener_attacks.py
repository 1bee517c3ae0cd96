"""What each attack on the HTTP listeners costs the extender in memory: `tfjob-extender serve` under attack.

For each attack a fresh `serve --cluster-snapshot examples/cluster.yaml` (the verb listener and the observe
listener on 127.0.0.1, every limit at its default) and the attacker in a process of its own
(`benchmarks/attackers.py`, niced by 10: on a shared 2-core machine the server and the filter calls it is
judged by come first, as they would against an attacker on another machine). Meanwhile kube-scheduler's
side calls filter every 50 ms, alternately on its keep-alive connection and on a new one. Prints, per
attack, the server's RSS before, at its peak during (VmRSS every 20 ms, and VmHWM) and the growth against
the target (under 100 MB), the slowest filter call, and what the attacker got (MiB the server took,
replies by status, connections ended unanswered).

| row | attack                                                   | before the listeners were bounded        |
|-----|----------------------------------------------------------|------------------------------------------|
| 1   | ~100 MiB of small request headers to the observe port   | RSS +1.0–1.2 GB in 3–5 s                 |
| 2   | one ever-growing header line to the observe port        | filter calls took ≥ 5 s                  |
| 3   | idle connections and heads of one byte a second, observe | never closed; new verb connections reset |
| 4   | 150 MiB of headers to the verb port; an 85 MiB URL       | RSS 1.94 GB, answered 200                |
| 5   | 1 000 pipelined filter calls (15 000 unknown candidates), never read | RSS 282 MB → 1.36 GB         |

`--attacks 1 4` runs some of them, `--seconds` sets how long each lasts at most (an attack with a budget,
rows 1 and 4, may end sooner).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.served_extender import MB, REPO, FilterProbe, RssPeak, ServedExtender, served_extender

TARGET_GROWTH_MB = 100
ATTACKER_NICENESS = 10


@dataclass(frozen=True)
class Attack:
    row: str
    label: str
    attacker: str
    """The attack's name in `benchmarks/attackers.py`."""
    listener: str
    """"verb" or "observe"."""
    options: tuple[str, ...] = ()


ATTACKS = (
    Attack("1", "~100 MiB of small headers", "header-flood", "observe", ("--budget-mib", "100")),
    Attack("2", "an ever-growing header line", "growing-header-line", "observe"),
    Attack("3", "idle and one-byte-a-second clients", "slow-clients", "observe", ("--idle", "512", "--slow", "128")),
    Attack("4", "150 MiB of headers to /filter", "verb-header-flood", "verb", ("--budget-mib", "150")),
    Attack("4", "an 85 MiB URL", "long-url", "verb", ("--budget-mib", "85")),
    Attack("5", "1 000 pipelined filters, never read", "pipelined-filters", "verb", ("--count", "1000")),
)


def attacker_process(attack: Attack, served: ServedExtender, seconds: float) -> subprocess.Popen[str]:
    address = served.verb if attack.listener == "verb" else served.observe
    assert address is not None
    command = [sys.executable, "-m", "benchmarks.attackers", attack.attacker, "--port", str(address[1])]
    command += ["--seconds", str(seconds), "--nice", str(ATTACKER_NICENESS), *attack.options]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)


def outcome_of(attacker: subprocess.Popen[str], wait_s: float) -> dict[str, Any]:
    """The attacker's outcome line, once it ended by itself (its budget or its time spent) or, after
    `wait_s`, was stopped."""
    try:
        out, _ = attacker.communicate(timeout=wait_s)
    except subprocess.TimeoutExpired:
        attacker.terminate()
        out, _ = attacker.communicate(timeout=30)
    lines = out.strip().splitlines()
    return dict(orjson.loads(lines[-1])) if lines else {}


def run_attack(attack: Attack, seconds: float) -> str:
    with served_extender() as served, RssPeak(served) as rss, FilterProbe(served.verb) as probe:
        outcome = outcome_of(attacker_process(attack, served, seconds), seconds + 30)
    worst = probe.summary()["worst_ms"]
    verdict = "ok" if rss.growth < TARGET_GROWTH_MB * MB else "OVER"
    took = f"{outcome.get('mib_sent', 0):>8.1f} MiB  statuses {outcome.get('statuses')}"
    return (
        f"{attack.row:<3} {attack.label:<38} {attack.listener:<8} | {rss.before / MB:>7.0f} {rss.peak / MB:>7.0f}"
        f" {rss.growth / MB:>7.0f} < {TARGET_GROWTH_MB} {verdict:<4} | {worst if worst is not None else '-':>8}"
        f" {len(probe.failures):>5} | {took}  unanswered {outcome.get('unanswered')}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=10.0, help="longest each attack lasts")
    parser.add_argument("--attacks", nargs="*", default=sorted({attack.row for attack in ATTACKS}), help="rows")
    args = parser.parse_args()
    print(
        f"{'row':<3} {'attack':<38} {'port':<8} | {'RSS MB':>7} {'peak':>7} {'growth':>7} {'target':<10} |"
        f" {'filter worst ms':>8} {'fails':>5} | the attacker"
    )
    for attack in ATTACKS:
        if attack.row in args.attacks:
            print(run_attack(attack, args.seconds), flush=True)


if __name__ == "__main__":
    main()
