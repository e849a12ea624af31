"""The main panels of docs/prometheus/grafana-dashboard.json drawn as one SVG, from the ranges
Prometheus returns for the same PromQL.

Four panels, each a line per series over the run's seconds: records per second (polled,
written, read by Spark), dead letters (cumulative), the strategy's batch time (p50 and p95 from
its histogram) and the lock-budget margin. A series' legend carries its latest, lowest and
highest value, so the figures can be read (and searched) without measuring lines. Prometheus answers
``/api/v1/query_range`` with ``[timestamp, "value"]`` pairs; ``NaN`` (a quantile over a window
without a batch) is a gap in the line, not a zero.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from kafka_share_eos.proving_ground.svg import chart_head

Points = list[tuple[float, float]]

RATE_WINDOW = "5s"
"""Window of the rates: five scrapes at Prometheus's one-second interval of the proving ground."""
QUANTILE_WINDOW = "10s"
"""Window of the batch-time quantiles, wider so that a slow batch still has one in its window."""

PANEL_WIDTH, PANEL_HEIGHT = 470, 210
PLOT_LEFT, PLOT_TOP, PLOT_BOTTOM, PLOT_RIGHT = 56, 28, 150, 14
COLUMNS = 2
HEAD = 50
COLOURS = ("#1565c0", "#2e7d32", "#ef6c00", "#6a1b9a")


@dataclass(frozen=True)
class PanelQuery:
    """One panel of the dashboard: its title, the unit its values are in, and the PromQL of
    each of its series by legend name, with ``{selector}`` where the query's labels go."""

    title: str
    unit: str
    series: Mapping[str, str]

    def promql(self, selector: str) -> dict[str, str]:
        """Each series' PromQL for the pipeline ``selector`` (``query="orders",...``)."""
        return {name: query.replace("{selector}", "{" + selector + "}")
                for name, query in self.series.items()}


def _quantile(q: float) -> str:
    return (f"histogram_quantile({q}, sum by (le) (rate(kafka_share_eos_batch_seconds_bucket"
            f"{{selector}}[{QUANTILE_WINDOW}])))")


PANELS = (
    PanelQuery("Records per second", "/s", {
        name: f"sum(rate(kafka_share_eos_{metric}_total{{selector}}[{RATE_WINDOW}]))"
        for name, metric in (("polled", "records"), ("written", "rows_written"),
                             ("read by Spark", "spark_input_rows"))}),
    PanelQuery("Dead letters", "", {
        "dead-lettered": "sum(kafka_share_eos_dead_letters_total{selector})"}),
    PanelQuery("Batch time", "s", {"p50": _quantile(0.5), "p95": _quantile(0.95)}),
    PanelQuery("Lock-budget margin", "", {
        "margin": "min(kafka_share_eos_lock_budget_margin{selector})"}),
)
"""The dashboard's panels this chart draws, in its order, with the PromQL of their series."""


@dataclass(frozen=True)
class Panel:
    """A panel's series as Prometheus returned them: legend name to ``(time, value)`` points."""

    title: str
    unit: str
    series: Mapping[str, Points]


def range_points(result: Sequence[Mapping[str, Any]]) -> Points:
    """The points of the one series of a ``query_range`` result (empty when it has none),
    ``NaN`` kept as it came."""
    if not result:
        return []
    return [(float(time), float(value)) for time, value in result[0]["values"]]


def number(value: float, unit: str = "") -> str:
    """``value`` as the legends write it: three significant digits, then ``unit``."""
    text = f"{value:.0f}" if value == 0 or abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}" if unit and unit != "/s" else text + unit


def axis_top(highest: float) -> float:
    """The top of a panel's axis: the first round number (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8
    times a power of ten) at least 5 % over ``highest``; 1 for a panel of zeros."""
    if highest <= 0:
        return 1.0
    wanted = highest * 1.05
    power = 10.0 ** math.floor(math.log10(wanted))
    return next(step * power for step in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10)
                if step * power >= wanted)


def legend(name: str, points: Points, unit: str) -> str:
    """A series' legend: its name, latest, lowest and highest value (the lowest is the one
    that matters for a margin)."""
    values = [value for _, value in points if not math.isnan(value)]
    if not values:
        return f"{name}: no value"
    return (f"{name}: last {number(values[-1], unit)}, min {number(min(values), unit)}, "
            f"max {number(max(values), unit)}")


def _segments(points: Points) -> list[Points]:
    """The runs of ``points`` between NaNs, each drawn as one line."""
    segments: list[Points] = [[]]
    for time, value in points:
        if math.isnan(value):
            segments.append([])
        else:
            segments[-1].append((time, value))
    return [segment for segment in segments if segment]


def _panel_svg(panel: Panel, x0: float, y0: float, start: float, end: float) -> list[str]:
    values = [v for points in panel.series.values() for _, v in points if not math.isnan(v)]
    top_value = axis_top(max([*values, 0.0]))
    width = PANEL_WIDTH - PLOT_LEFT - PLOT_RIGHT
    height = PLOT_BOTTOM - PLOT_TOP
    left, bottom = x0 + PLOT_LEFT, y0 + PLOT_BOTTOM
    span = (end - start) or 1.0

    def xy(time: float, value: float) -> str:
        x = left + width * (time - start) / span
        return f"{x:.1f},{bottom - height * value / top_value:.1f}"

    parts = [
        f'<g class="panel"><text x="{x0 + 8}" y="{y0 + 16}" font-weight="bold">'
        f"{escape(panel.title)}</text>",
        f'<rect x="{left}" y="{y0 + PLOT_TOP}" width="{width}" height="{height}" fill="none" '
        'stroke="#bbb"/>',
        f'<text x="{left - 4}" y="{y0 + PLOT_TOP + 4}" text-anchor="end" fill="#555">'
        f"{escape(number(top_value, panel.unit))}</text>",
        f'<text x="{left - 4}" y="{bottom + 4}" text-anchor="end" fill="#555">0</text>',
        f'<text x="{left}" y="{bottom + 14}" fill="#555">0 s</text>',
        f'<text x="{left + width}" y="{bottom + 14}" text-anchor="end" fill="#555">'
        f"{span:.0f} s</text>",
    ]
    for index, (name, points) in enumerate(panel.series.items()):
        colour = COLOURS[index % len(COLOURS)]
        parts += [f'<polyline fill="none" stroke="{colour}" stroke-width="1.8" points="'
                  + " ".join(xy(t, v) for t, v in segment) + '"/>'
                  for segment in _segments(points)]
        y = bottom + 30 + 14 * index
        parts += [
            f'<rect x="{left}" y="{y - 8}" width="10" height="3" fill="{colour}"/>',
            f'<text x="{left + 16}" y="{y}">{escape(legend(name, points, panel.unit))}</text>',
        ]
    return [*parts, "</g>"]


def chart_svg(panels: Sequence[Panel], title: str, subtitle: str) -> str:
    """One SVG of ``panels``, two to a row, over the same time axis (the first to the last
    point of any series)."""
    times = [t for panel in panels for points in panel.series.values() for t, _ in points]
    start, end = (min(times), max(times)) if times else (0.0, 0.0)
    rows = math.ceil(len(panels) / COLUMNS)
    width, height = PANEL_WIDTH * COLUMNS + 10, HEAD + PANEL_HEIGHT * rows
    parts = chart_head(width, height, title, subtitle)
    for index, panel in enumerate(panels):
        row, column = divmod(index, COLUMNS)
        parts += _panel_svg(panel, 10 + column * PANEL_WIDTH, HEAD + row * PANEL_HEIGHT,
                            start, end)
    return "\n".join([*parts, "</svg>"]) + "\n"
