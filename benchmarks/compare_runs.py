"""Two quality-matrix runs of ours side by side: per scenario, the ratio of each figure (after ÷ before).

`benchmarks/quality_matrix.py --policy ours --json FILE` writes one record per (scenario, seed); run it
from two versions of the code (or with two settings) and compare them here. Prints, per scenario, the
mean over the seeds both runs share of the average JCT and the lost work before and after, their ratio,
the largest seed's JCT ratio, and the most times one job was taken in an hour (after).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any


def load(path: Path) -> dict[tuple[str, int], dict[str, Any]]:
    rows = json.loads(path.read_text())
    return {(row["scenario"], row["seed"]): row for row in rows if row["policy"] == "ours"}


def ratio(after: float, before: float) -> str:
    return f"{after / before:.3f}" if before else ("1.000" if not after else "inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = load(args.before), load(args.after)
    print("| scenario | seeds | avg JCT s before → after | ratio | worst seed | lost work before → after | ratio "
          "| takings/h max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for scenario in sorted({scenario for scenario, _ in before}):
        seeds = sorted(seed for s, seed in before if s == scenario and (s, seed) in after)
        if not seeds:
            continue
        pairs = [(before[(scenario, seed)], after[(scenario, seed)]) for seed in seeds]
        jct = [statistics.mean(row["avg_jct_s"] for row in side) for side in zip(*pairs, strict=True)]
        lost = [statistics.mean(row["lost_work_s"] for row in side) for side in zip(*pairs, strict=True)]
        worst = max(b_a[1]["avg_jct_s"] / b_a[0]["avg_jct_s"] for b_a in pairs)
        takings = max(row.get("max_takings_per_hour", 0) for _, row in pairs)
        print(
            f"| {scenario} | {seeds[0]}–{seeds[-1]} | {jct[0]:.0f} → {jct[1]:.0f} | {ratio(jct[1], jct[0])} "
            f"| {worst:.3f} | {lost[0]:.0f} → {lost[1]:.0f} | {ratio(lost[1], lost[0])} | {takings} |"
        )


if __name__ == "__main__":
    main()
