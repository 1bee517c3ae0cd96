"""A PNG timeline of a run on the local control plane: per job, when it was submitted, how long it waited,
when it ran and where.

Each job is a row: a grey bar from submission to the moment its last pod was bound (waiting), then a bar
in the job's colour until it finished (running; open-ended when it had not by the end of the run), with
the nodes it ran on written after it. matplotlib (the `sim` extra) draws it, off-screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

WAITING_COLOUR = "#bdbdbd"
ROW_HEIGHT_IN = 0.45
"""Figure height per job, inches."""
FIGURE_WIDTH_IN = 10.0


@dataclass(frozen=True, slots=True)
class JobSpan:
    job: str
    submitted: float
    """Seconds since the start of the run."""
    started: float | None
    """When its last pod was bound (None: never, within the run)."""
    finished: float | None
    """When every pod had succeeded (None: not within the run)."""
    nodes: tuple[str, ...] = ()


def draw_timeline(spans: Sequence[JobSpan], end: float, path: Path, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(FIGURE_WIDTH_IN, 1.2 + ROW_HEIGHT_IN * max(1, len(spans))))
    palette = plt.get_cmap("tab10")
    for row, span in enumerate(reversed(spans)):
        colour = palette((len(spans) - 1 - row) % 10)
        waited_until = span.started if span.started is not None else end
        axes.barh(row, waited_until - span.submitted, left=span.submitted, color=WAITING_COLOUR, height=0.6)
        if span.started is not None:
            ran_until = span.finished if span.finished is not None else end
            axes.barh(row, ran_until - span.started, left=span.started, color=colour, height=0.6)
            where = ", ".join(span.nodes)
            axes.text(ran_until + 0.5, row, where, va="center", fontsize=8)
    axes.set_yticks(range(len(spans)), [span.job for span in reversed(spans)])
    axes.set_xlabel("seconds since the first submission (grey: waiting; colour: running, with its nodes)")
    axes.set_xlim(0, end * 1.25 + 1)
    axes.set_title(title or "TFJobs on the local control plane")
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
