"""Every ratio of a benchmark run against its target, as one SVG bar chart.

Rows measure different things (speed ratios, µs per record, MiB, slots), so each bar is drawn
as a share of its own target: the measured value over the bound for a ``≥`` target, the bound
over the value for a ``≤`` one. At 1 the target is exactly met; a bar past the line meets it, a
bar short of it misses, and is drawn and labelled as missed. Rows without a target are left
out. The file is plain SVG, readable on GitHub and in the docs.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

from kafka_share_eos.proving_ground.bench.ratios import Ratio
from kafka_share_eos.proving_ground.svg import chart_head

ROW_HEIGHT = 22
LABEL_WIDTH = 560
BAR_WIDTH = 420
TEXT_WIDTH = 230
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


def chart_svg(ratios: Sequence[Ratio], title: str) -> str:
    """The SVG chart of the rows of ``ratios`` that have a target."""
    rows = [ratio for ratio in ratios if ratio.target is not None]
    width = LABEL_WIDTH + BAR_WIDTH + TEXT_WIDTH
    top = 48
    height = top + ROW_HEIGHT * len(rows) + 30
    x_target = LABEL_WIDTH + BAR_WIDTH / SCALE_MAX
    met = sum(1 for ratio in rows if ratio.meets)
    parts = chart_head(width, height, title, "each bar: the measured value as a share of its "
                       f"target (the line); {met} of {len(rows)} targets met")
    for index, ratio in enumerate(rows):
        y = top + index * ROW_HEIGHT
        share = share_of_target(ratio)
        length = BAR_WIDTH * min(share, SCALE_MAX) / SCALE_MAX
        colour = MET if ratio.meets else MISSED
        label = f"{ratio.benchmark}: {ratio.name}"
        if len(label) > 88:
            label = label[:87] + "…"
        verdict = "" if ratio.meets else " — missed"
        parts += [
            f'<text x="{LABEL_WIDTH - 8}" y="{y + 15}" text-anchor="end">{escape(label)}</text>',
            f'<rect x="{LABEL_WIDTH}" y="{y + 4}" width="{length:.1f}" height="{ROW_HEIGHT - 8}" '
            f'fill="{colour}"/>',
            f'<text x="{LABEL_WIDTH + BAR_WIDTH + 8}" y="{y + 15}" fill="{colour}">'
            f'{escape(ratio.value_text)} (target {escape(ratio.target_text)}){verdict}</text>',
        ]
    bottom = top + ROW_HEIGHT * len(rows)
    parts += [
        f'<line x1="{x_target:.1f}" y1="{top}" x2="{x_target:.1f}" y2="{bottom}" '
        'stroke="black" stroke-dasharray="4 3"/>',
        f'<text x="{x_target:.1f}" y="{bottom + 16}" text-anchor="middle">target</text>',
        "</svg>",
    ]
    return "\n".join(parts) + "\n"
