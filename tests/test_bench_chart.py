"""``bench --save`` writes a chart of every ratio against its target beside its table and JSON:
one bar per row with a target, each a share of its target, missed ones marked."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from kafka_share_eos.cli.bench import save_results
from kafka_share_eos.proving_ground.bench.chart import chart_svg, share_of_target
from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target
from kafka_share_eos.proving_ground.bench.suite import QUICK, SuiteResult

ROWS = [
    Ratio("source", "stream rate vs raw loop", 0.82, target=Target(">=", 0.9)),
    Ratio("source", "runner CPU per record", 2.5, unit="µs/record", target=Target("<=", 5.0)),
    Ratio("consumers", "driver CPU per record", 0.93),
]
SVG = "{http://www.w3.org/2000/svg}"


def test_each_row_with_a_target_is_one_bar_as_a_share_of_it_and_a_miss_is_marked() -> None:
    svg = ET.fromstring(chart_svg(ROWS, "run"))
    bars = [rect for rect in svg.iter(f"{SVG}rect")][1:]  # the first is the background
    texts = [text.text or "" for text in svg.iter(f"{SVG}text")]
    assert len(bars) == 2
    assert share_of_target(ROWS[0]) < 1 < share_of_target(ROWS[1]) == 2.0
    assert float(bars[0].get("width", 0)) < float(bars[1].get("width", 0))
    assert "0.82x (target ≥ 0.9x) — missed" in texts
    assert "2.50 µs/record (target ≤ 5 µs/record)" in texts
    assert not any("driver CPU" in text for text in texts)
    assert "1 of 2 targets met" in " ".join(texts)


def test_save_writes_the_json_the_table_and_the_chart_it_shows(tmp_path: Path) -> None:
    result = SuiteResult(QUICK, {"cpus": "2", "cpu model": "x", "memory": "1 GiB", "os": "y",
                                 "python": "3", "spark": "4", "librdkafka": "2",
                                 "deltalake": "1", "postgres": "15"}, ROWS)
    save_results(result, tmp_path / "results" / "benchmarks")
    saved = json.loads((tmp_path / "results" / "benchmarks.json").read_text())
    assert [Ratio.from_json(row) for row in saved["ratios"]] == ROWS
    table = (tmp_path / "results" / "benchmarks.md").read_text()
    assert "![Every ratio against its target](benchmarks.svg)" in table
    ET.parse(tmp_path / "results" / "benchmarks.svg")
