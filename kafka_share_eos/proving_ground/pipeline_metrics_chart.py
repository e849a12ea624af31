"""The main panels of docs/prometheus/grafana-dashboard.json for one run: the PromQL of their
series, the points Prometheus returned saved as JSON, and the SVG chart drawn from that file.

Four panels, each a line per series over the run's seconds: records per second (polled,
written, read by Spark), dead letters (cumulative), the strategy's batch time (p50 and p95 from
its histogram) and the lock-budget margin. A series' legend carries its latest, lowest and
highest value, so the figures can be read (and searched) without measuring lines. Prometheus
answers ``/api/v1/query_range`` with ``[timestamp, "value"]`` pairs; ``NaN`` (a quantile over a
window without a batch) is a gap in the line, not a zero, and ``null`` in the JSON.

The monitored run (:mod:`~kafka_share_eos.proving_ground.monitored_run`) saves its series with
:func:`save_series` and draws them with :func:`redraw`; ``python -m
kafka_share_eos.proving_ground.pipeline_metrics_chart docs/results/pipeline-metrics.json``
draws the chart again from the saved file, without running anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos.proving_ground.svg_figure import redraw_each, svg_chart

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

Points = list[tuple[float, float]]

RATE_WINDOW = "5s"
"""Window of the rates: five scrapes at Prometheus's one-second interval of the proving ground."""
QUANTILE_WINDOW = "10s"
"""Window of the batch-time quantiles, wider so that a slow batch still has one in its window."""

COLUMNS = 2
WIDTH, PANEL_HEIGHT = 13.0, 3.1
"""Inches: the chart's width, and the height of a row of panels with their legends."""
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
    return (f"histogram_quantile({q}, sum by (le) "
            f"(rate(kafka_share_eos_strategy_batch_duration_seconds_bucket"
            f"{{selector}}[{QUANTILE_WINDOW}])))")


PANELS = (
    PanelQuery("Records per second", "/s", {
        name: f"sum(rate(kafka_share_eos_{metric}_total{{selector}}[{RATE_WINDOW}]))"
        for name, metric in (("polled", "records_consumed"), ("written", "strategy_written_rows"),
                             ("read by Spark", "spark_input_rows"))}),
    PanelQuery("Dead letters", "", {
        "dead-lettered": "sum(kafka_share_eos_dead_lettered_rows_total{selector})"}),
    PanelQuery("Batch time", "s", {"p50": _quantile(0.5), "p95": _quantile(0.95)}),
    PanelQuery("Lock-budget margin", "", {
        "margin": "min(kafka_share_eos_record_lock_remaining_ratio{selector})"}),
)
"""The dashboard's panels this chart draws, in its order, with the PromQL of their series."""


@dataclass(frozen=True)
class Panel:
    """A panel's series as Prometheus returned them: legend name to ``(time, value)`` points,
    and the PromQL each was asked with."""

    title: str
    unit: str
    series: Mapping[str, Points]
    promql: Mapping[str, str] = field(default_factory=dict)


def range_points(result: Sequence[Mapping[str, Any]]) -> Points:
    """The points of the one series of a ``query_range`` result (empty when it has none),
    ``NaN`` kept as it came."""
    if not result:
        return []
    return [(float(time), float(value)) for time, value in result[0]["values"]]


def number(value: float, unit: str = "") -> str:
    """``value`` as the legends and axes write it: three significant digits, then ``unit``."""
    text = f"{value:.0f}" if value == 0 or abs(value) >= 100 else f"{value:.3g}"
    return f"{text} {unit}" if unit and unit != "/s" else text + unit


def legend(name: str, points: Points, unit: str) -> str:
    """A series' legend: its name, latest, lowest and highest value (the lowest is the one
    that matters for a margin)."""
    values = [value for _, value in points if not math.isnan(value)]
    if not values:
        return f"{name}: no value"
    return (f"{name}: last {number(values[-1], unit)}, min {number(min(values), unit)}, "
            f"max {number(max(values), unit)}")


def _draw_panel(axes: Axes, panel: Panel, start: float, span: float) -> None:
    axes.set_title(panel.title, loc="left", fontweight="bold")
    values = [0.0]
    for index, (name, points) in enumerate(panel.series.items()):
        # NaN stays in the points: matplotlib leaves a gap there, as Grafana does.
        (line,) = axes.plot([time - start for time, _ in points], [v for _, v in points],
                            color=COLOURS[index % len(COLOURS)], linewidth=1.8,
                            label=legend(name, points, panel.unit))
        line.set_gid(f"{axes.get_gid()}-series-{index}")
        values += [value for _, value in points if not math.isnan(value)]
    axes.set_xlim(0, span)
    # A panel of zeros (or of no point) still gets an axis to read them on.
    axes.set_ylim(min(values), max(values) * 1.05 or 1.0)
    axes.yaxis.set_major_formatter(lambda value, _: number(value, panel.unit))
    axes.set_xlabel("seconds into the run")
    axes.grid(axis="y", color="#dddddd", linewidth=0.6)
    axes.legend(loc="upper left", bbox_to_anchor=(0, -0.22), frameon=False, handlelength=1.2)


def chart_svg(panels: Sequence[Panel], title: str, subtitle: str) -> str:
    """One SVG of ``panels``, two to a row, over the same time axis (the first to the last
    point of any series).

    Raises:
        MissingExtraError: matplotlib (the ``charts`` extra) is not installed.
    """
    times = [t for panel in panels for points in panel.series.values() for t, _ in points]
    start, end = (min(times), max(times)) if times else (0.0, 0.0)
    rows = math.ceil(len(panels) / COLUMNS)

    def draw(figure: Figure) -> None:
        for index, panel in enumerate(panels):
            axes = figure.add_subplot(rows, COLUMNS, index + 1)
            # An id per panel, so a reader of the SVG (its test) can find each one's parts.
            axes.set_gid(f"panel-{index}")
            _draw_panel(axes, panel, start, (end - start) or 1.0)

    return svg_chart("the monitored run's chart", (WIDTH, 0.7 + PANEL_HEIGHT * rows), title,
                     subtitle, draw)


def save_series(saved: Path, title: str, subtitle: str, panels: Sequence[Panel],
                run: Mapping[str, object]) -> None:
    """Write the chart's data to ``saved``: its title and subtitle, ``run``'s counts, and each
    panel's PromQL and points (``[time, value]``, ``null`` for NaN)."""
    data = {"title": title, "subtitle": subtitle, "run": dict(run), "panels": [
        {"title": panel.title, "unit": panel.unit, "promql": dict(panel.promql),
         "series": {name: [[time, None if math.isnan(value) else value]
                           for time, value in points]
                    for name, points in panel.series.items()}}
        for panel in panels]}
    text = json.dumps(data, indent=1)
    # A point a line, not its time and value on a line each: the file stays short to read.
    text = re.sub(r"\[\s+(\S+),\s+(\S+)\s+\]", r"[\1, \2]", text)
    saved.parent.mkdir(parents=True, exist_ok=True)
    saved.write_text(text + "\n", encoding="utf-8")


def saved_panels(saved: Path) -> tuple[dict[str, Any], list[Panel]]:
    """What :func:`save_series` wrote to ``saved``: the whole document, and its panels."""
    data = json.loads(saved.read_text(encoding="utf-8"))
    panels = [Panel(panel["title"], panel["unit"], {
        name: [(float(time), math.nan if value is None else float(value))
               for time, value in points]
        for name, points in panel["series"].items()}, panel["promql"])
        for panel in data["panels"]]
    return data, panels


def redraw(saved: Path) -> Path:
    """Draw the chart of the series saved at ``saved`` to the ``.svg`` beside it, and return
    that file."""
    data, panels = saved_panels(saved)
    chart = saved.with_suffix(".svg")
    chart.write_text(chart_svg(panels, data["title"], data["subtitle"]), encoding="utf-8")
    return chart


def main() -> None:
    """Redraw the chart of each saved run named on the command line."""
    redraw_each("Redraw a monitored run's chart from the series it saved, beside them.",
                redraw)


if __name__ == "__main__":
    main()
