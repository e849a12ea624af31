"""The chart of a pipeline's metrics: one panel per dashboard panel it draws, a line per series
from the points Prometheus's ``query_range`` returns, gaps where it returned NaN, and legends
carrying each series' latest, lowest and highest value."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from kafka_share_eos.proving_ground.monitoring_chart import (
    PANELS,
    Panel,
    chart_svg,
    range_points,
)

SVG = "{http://www.w3.org/2000/svg}"
DASHBOARD = Path(__file__).resolve().parent.parent / "docs" / "prometheus" / \
    "grafana-dashboard.json"


def result(*values: str) -> list[dict[str, object]]:
    """A ``query_range`` result of one series, a point a second from t=1000."""
    return [{"metric": {}, "values": [[1000 + i, v] for i, v in enumerate(values)]}]


def test_each_panel_is_drawn_with_its_series_and_values() -> None:
    panels = [
        Panel("Records per second", "/s", {"polled": range_points(result("0", "20", "40", "0")),
                                           "written": range_points(result("0", "18", "36", "0"))}),
        Panel("Dead letters", "", {"dead-lettered": range_points(result("0", "2", "8", "8"))}),
        Panel("Batch time", "s", {"p95": range_points(result("NaN", "0.4", "NaN", "4.75"))}),
        Panel("Lock-budget margin", "", {"margin": range_points(result())}),
    ]
    svg = ET.fromstring(chart_svg(panels, "A pipeline's metrics", "400 records"))
    groups = [g for g in svg.iter(f"{SVG}g") if g.get("class") == "panel"]
    texts = [[t.text for t in g.iter(f"{SVG}text")] for g in groups]
    assert [panel_texts[0] for panel_texts in texts] == [p.title for p in panels]
    assert "polled: last 0/s, min 0/s, max 40/s" in texts[0]
    assert "written: last 0/s, min 0/s, max 36/s" in texts[0]
    assert "dead-lettered: last 8, min 0, max 8" in texts[1]
    assert "p95: last 4.75 s, min 0.4 s, max 4.75 s" in texts[2]
    assert "margin: no value" in texts[3]
    # The NaNs split the p95 line into two runs of one point each; no line for no points.
    lines = [len(g.findall(f"{SVG}polyline")) for g in groups]
    assert lines == [2, 1, 2, 0]
    assert "3 s" in texts[0]  # the time axis spans the points, 1000 to 1003
    # Each axis tops at a round number over the panel's highest value.
    assert [panel_texts[1] for panel_texts in texts] == ["50/s", "10", "5 s", "1"]


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
