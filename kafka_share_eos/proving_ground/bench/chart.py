"""Every ratio of a benchmark run against its target, as one SVG bar chart.

Rows measure different things (speed ratios, µs per record, MiB, slots), so each bar is drawn
as a share of its own target: the measured value over the bound for a ``≥`` target, the bound
over the value for a ``≤`` one. At 1 the target is exactly met; a bar past the line meets it, a
bar short of it misses, and is drawn and labelled as missed. Rows without a target are left
out. ``bench --save`` draws it beside the run's table and JSON;
``python -m kafka_share_eos.proving_ground.bench.chart docs/results/benchmarks.json`` draws it
again from a saved run.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_share_eos.proving_ground.bench.ratios import Ratio
from kafka_share_eos.proving_ground.bench.suite import QUICK, run_title
from kafka_share_eos.proving_ground.svg_figure import redraw_each, svg_chart

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH = 13.0
"""Inches: room for the longest comparison's name, the bars and their values."""
ROW_HEIGHT = 0.25
LABEL_CHARACTERS = 88
SCALE_MAX = 2.0
"""Shares of the target beyond this are drawn cut, with their value written out."""
MET, MISSED = "#2e7d32", "#c62828"


def share_of_target(ratio: Ratio) -> float:
    """How far ``ratio`` is from its target: 1 exactly on it, above 1 better."""
    assert ratio.target is not None
    bound, value = ratio.target.bound, ratio.value
    if ratio.target.op == ">=":
        return value / bound
    return bound / value if value else float("inf")


def _label(ratio: Ratio) -> str:
    label = f"{ratio.benchmark}: {ratio.name}"
    return label if len(label) <= LABEL_CHARACTERS else label[:LABEL_CHARACTERS - 1] + "…"


def _bars(figure: Figure, rows: Sequence[Ratio]) -> None:
    axes = figure.add_subplot()
    for index, ratio in enumerate(rows):
        colour = MET if ratio.meets else MISSED
        bars = axes.barh(index, min(share_of_target(ratio), SCALE_MAX), height=0.64,
                         color=colour)
        # An id per bar, so a reader of the SVG (its test) can tell the bars from the frame.
        bars.patches[0].set_gid(f"bar-{index}")
        verdict = "" if ratio.meets else " — missed"
        axes.text(1.01, index, f"{ratio.value_text} (target {ratio.target_text}){verdict}",
                  color=colour, va="center", transform=axes.get_yaxis_transform())
    axes.set_yticks(range(len(rows)), [_label(ratio) for ratio in rows])
    axes.set_ylim(len(rows) - 0.5, -0.5)
    axes.set_xlim(0, SCALE_MAX)
    axes.set_xticks([0, 0.5, 1, 1.5, 2], ["0", "0.5", "1: target", "1.5", "2 or more"])
    axes.axvline(1, color="black", linestyle=(0, (4, 3)), linewidth=1)
    axes.tick_params(axis="y", length=0)


def chart_svg(ratios: Sequence[Ratio], title: str) -> str:
    """The SVG chart of the rows of ``ratios`` that have a target.

    Raises:
        MissingExtraError: matplotlib (the ``charts`` extra) is not installed.
    """
    rows = [ratio for ratio in ratios if ratio.target is not None]
    met = sum(1 for ratio in rows if ratio.meets)
    subtitle = ("each bar: the measured value as a share of its target (the line); "
                f"{met} of {len(rows)} targets met")
    height = 1.0 + ROW_HEIGHT * max(len(rows), 1)
    return svg_chart("the benchmarks' chart", (WIDTH, height), title, subtitle,
                     lambda figure: _bars(figure, rows))


def redraw(saved: Path) -> Path:
    """Draw the chart of the run ``bench --save`` wrote to ``saved`` (its ``.json``) again, to
    the ``.svg`` beside it, and return that file."""
    run = json.loads(saved.read_text(encoding="utf-8"))
    # Compared as saved: the run's JSON has lists where Sizes has tuples.
    quick = run["sizes"] == json.loads(json.dumps(asdict(QUICK)))
    chart = saved.with_suffix(".svg")
    ratios = [Ratio.from_json(row) for row in run["ratios"]]
    chart.write_text(chart_svg(ratios, run_title(quick)), encoding="utf-8")
    return chart


def main() -> None:
    """Redraw the chart of each saved run named on the command line."""
    redraw_each("Redraw the chart of runs saved by `kafka-share-eos bench --save`, beside "
                "each.", redraw)


if __name__ == "__main__":
    main()
