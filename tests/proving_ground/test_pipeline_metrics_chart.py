"""The chart of a pipeline's metrics: one panel per dashboard panel it draws, a line per series
from the points Prometheus's ``query_range`` returns, gaps where it returned NaN, and legends
carrying each series' latest, lowest and highest value; the series saved as JSON and the chart
drawn again from that file; and the figures docs/operations.md quotes are the saved run's."""

from __future__ import annotations

import json
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from kafka_share_eos.proving_ground.pipeline_metrics_chart import (
    PANELS,
    Panel,
    chart_svg,
    redraw,
    save_series,
    saved_panels,
)

SVG = "{http://www.w3.org/2000/svg}"
ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "docs" / "prometheus" / "grafana-dashboard.json"
SAVED_RUN = ROOT / "docs" / "results" / "pipeline-metrics.json"


def series(*values: str) -> list[tuple[float, float]]:
    """A series as ``range_points`` reads it, a point a second from t=1000."""
    return [(1000.0 + i, float(v)) for i, v in enumerate(values)]


PANELS_DRAWN = [
    Panel("Records per second", "/s", {"polled": series("0", "20", "40", "0", "0"),
                                       "written": series("0", "18", "36", "0", "0")}),
    Panel("Dead letters", "", {"dead-lettered": series("0", "2", "8", "8", "8")}),
    Panel("Batch time", "s", {"p95": series("0.4", "0.5", "NaN", "4.75", "4.5")}),
    Panel("Lock-budget margin", "", {"margin": []}),
]


def panel_groups(svg: ET.Element) -> dict[str, ET.Element]:
    return {g.get("id", ""): g for g in svg.iter(f"{SVG}g")
            if re.fullmatch(r"panel-\d+(-series-\d+)?", g.get("id", ""))}


def texts(group: ET.Element) -> list[str]:
    return [text.text for text in group.iter(f"{SVG}text") if text.text]


def runs(line: ET.Element) -> int:
    """How many unbroken runs a series' line is drawn in (a NaN starts a new one)."""
    return sum(path.get("d", "").count("M") for path in line.iter(f"{SVG}path"))


def test_each_panel_is_drawn_with_its_series_and_values() -> None:
    svg = ET.fromstring(chart_svg(PANELS_DRAWN, "A pipeline's metrics", "400 records"))
    groups = panel_groups(svg)
    panels = [groups[f"panel-{index}"] for index in range(len(PANELS_DRAWN))]
    assert len([name for name in groups if "series" not in name]) == 4
    for panel, drawn in zip(PANELS_DRAWN, panels, strict=True):
        assert panel.title in texts(drawn)
    assert "polled: last 0/s, min 0/s, max 40/s" in texts(panels[0])
    assert "written: last 0/s, min 0/s, max 36/s" in texts(panels[0])
    assert "dead-lettered: last 8, min 0, max 8" in texts(panels[1])
    assert "p95: last 4.5 s, min 0.4 s, max 4.75 s" in texts(panels[2])
    assert "margin: no value" in texts(panels[3])
    # The NaN splits the p95 line in two; no line for no points.
    assert [runs(groups[f"panel-{p}-series-{s}"]) for p, s in
            ((0, 0), (0, 1), (1, 0), (2, 0), (3, 0))] == [1, 1, 1, 2, 0]
    # The axes write their values in the panel's unit.
    assert "40/s" in texts(panels[0])
    assert "4 s" in texts(panels[2])
    assert {"A pipeline's metrics", "400 records"} <= set(texts(svg))


def test_the_series_are_saved_as_json_and_drawn_again_from_it(tmp_path: Path) -> None:
    saved = tmp_path / "pipeline-metrics.json"
    save_series(saved, "A pipeline's metrics", "400 records", PANELS_DRAWN, {"orders": 400})
    # NaN is not JSON: the file holds null there.
    data = json.loads(saved.read_text())
    assert data["panels"][2]["series"]["p95"][2] == [1002.0, None]
    assert data["run"] == {"orders": 400}
    document, panels = saved_panels(saved)
    assert document["subtitle"] == "400 records"
    assert [(p.title, p.unit, list(p.series)) for p in panels] == [
        (p.title, p.unit, list(p.series)) for p in PANELS_DRAWN]
    assert math.isnan(panels[2].series["p95"][2][1])
    assert panels[1].series == PANELS_DRAWN[1].series
    chart = redraw(saved)
    assert chart == tmp_path / "pipeline-metrics.svg"
    # The same file as drawn from the points directly, and again on a second redraw.
    expected = chart_svg(PANELS_DRAWN, "A pipeline's metrics", "400 records")
    assert chart.read_text() == expected
    assert redraw(saved).read_text() == expected


def test_the_panels_query_what_the_dashboard_queries() -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    titles = {panel["title"] for panel in dashboard["panels"]}
    metrics = " ".join(t["expr"] for panel in dashboard["panels"] for t in panel["targets"])
    for panel in PANELS:
        assert any(title.startswith(panel.title) for title in titles), panel.title
        for promql in panel.promql('query="orders"').values():
            metric = promql.split("{")[0].split("(")[-1]
            assert metric in metrics, promql
            assert '{query="orders"}' in promql


def test_the_operations_page_quotes_the_saved_run() -> None:
    document, panels = saved_panels(SAVED_RUN)
    run = document["run"]
    by_title = {panel.title: panel for panel in panels}

    def values(title: str, name: str) -> list[float]:
        return [v for _, v in by_title[title].series[name] if not math.isnan(v)]

    page = " ".join((ROOT / "docs" / "operations.md").read_text().split())
    quoted = re.search(
        r"from a real run on (?P<day>[\d-]+) .*?: (?P<orders>\d+) orders, (?P<letters>\d+) of "
        r"them not JSON, .*? in (?P<batches>\d+) batches .*? the p95 batch time of "
        r"(?P<p95>[\d.]+) s and the lock-budget margin down to (?P<margin>[\d.]+) of a 10 s "
        r"lock; the dead letters climb to (?P<climb>\d+)\.", page)
    assert quoted is not None
    assert quoted["day"] == run["day"]
    assert int(quoted["orders"]) == run["orders"]
    assert int(quoted["letters"]) == run["dead_letters"] == int(quoted["climb"])
    assert int(quoted["batches"]) == run["batches"]
    assert quoted["p95"] == f"{max(values('Batch time', 'p95')):.2g}"
    assert quoted["margin"] == f"{min(values('Lock-budget margin', 'margin')):.2g}"
    assert max(values("Dead letters", "dead-lettered")) == run["dead_letters"]
