"""``bench --save`` writes a chart of every ratio against its target beside its table and JSON:
one bar per row with a target, each a share of its target, missed ones marked, its text kept as
text; and the chart of a saved run can be drawn again from its JSON alone."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.extras import without

from kafka_share_eos.cli.bench import save_results
from kafka_share_eos.proving_ground.bench.chart import (
    MET,
    MISSED,
    chart_svg,
    redraw,
    share_of_target,
)
from kafka_share_eos.proving_ground.bench.ratios import Ratio, Target
from kafka_share_eos.proving_ground.bench.suite import FULL, QUICK, SuiteResult

ROWS = [
    Ratio("source", "stream rate vs raw loop", 0.82, target=Target(">=", 0.9)),
    Ratio("source", "runner CPU per record", 2.0, unit="µs/record", target=Target("<=", 5.0)),
    Ratio("consumers", "driver CPU per record", 0.93),
    Ratio("upsert", "new keys vs COPY append", 0.99, target=Target(">=", 0.9)),
]
MACHINE = {"cpus": "2", "cpu model": "x", "memory": "1 GiB", "os": "y", "python": "3",
           "spark": "4", "librdkafka": "2", "deltalake": "1", "postgres": "15"}
SVG = "{http://www.w3.org/2000/svg}"


def texts(svg: ET.Element) -> list[str]:
    return [text.text for text in svg.iter(f"{SVG}text") if text.text]


def bars(svg: ET.Element) -> list[tuple[float, str]]:
    """Each bar's width and fill, top to bottom."""
    found = []
    for group in svg.iter(f"{SVG}g"):
        if re.fullmatch(r"bar-\d+", group.get("id", "")):
            path = group.find(f"{SVG}path")
            assert path is not None
            xs = [float(x) for x in re.findall(r"[ML] ([\d.]+) ", path.get("d", ""))]
            fill = re.search(r"fill: (#\w+)", path.get("style", ""))
            assert fill is not None
            found.append((max(xs) - min(xs), fill.group(1)))
    return found


def test_each_row_with_a_target_is_one_bar_as_a_share_of_it_and_a_miss_is_marked() -> None:
    svg = ET.fromstring(chart_svg(ROWS, "run"))
    drawn = bars(svg)
    labels = texts(svg)
    # Three rows have a target; the one without is left out.
    assert [fill for _, fill in drawn] == [MISSED, MET, MET]
    assert share_of_target(ROWS[0]) < 1 < share_of_target(ROWS[3]) < share_of_target(ROWS[1])
    # The 2.5x share of the ≤ target is cut at the scale's end, twice the target's length.
    widths = [width for width, _ in drawn]
    assert widths[0] < widths[2] < widths[1]
    assert abs(widths[1] / widths[2] - 2.0 / share_of_target(ROWS[3])) < 0.01
    assert "0.82x (target ≥ 0.9x) — missed" in labels
    assert "2.00 µs/record (target ≤ 5 µs/record)" in labels
    assert "0.99x (target ≥ 0.9x)" in labels
    assert "source: stream rate vs raw loop" in labels
    assert not any("driver CPU" in text for text in labels)
    assert "run" in labels
    assert any(text.endswith("2 of 3 targets met") for text in labels)
    assert "1: target" in labels


def test_the_same_rows_draw_the_same_file() -> None:
    # A chart redrawn from unchanged data leaves git nothing to show: no date, fixed ids.
    assert chart_svg(ROWS, "run") == chart_svg(ROWS, "run")


def test_save_writes_the_json_the_table_and_the_chart_it_shows(tmp_path: Path) -> None:
    result = SuiteResult(QUICK, MACHINE, ROWS)
    save_results(result, tmp_path / "results" / "benchmarks")
    saved = json.loads((tmp_path / "results" / "benchmarks.json").read_text())
    assert [Ratio.from_json(row) for row in saved["ratios"]] == ROWS
    table = (tmp_path / "results" / "benchmarks.md").read_text()
    assert "![Every ratio against its target](benchmarks.svg)" in table
    chart = ET.parse(tmp_path / "results" / "benchmarks.svg").getroot()
    assert len(bars(chart)) == 3
    assert "kafka-share-eos benchmarks (--quick)" in texts(chart)


def test_a_saved_run_is_drawn_again_from_its_json(tmp_path: Path) -> None:
    for sizes, name in ((QUICK, "quick"), (FULL, "full")):
        save_results(SuiteResult(sizes, MACHINE, ROWS), tmp_path / name)
        drawn = (tmp_path / f"{name}.svg").read_text()
        (tmp_path / f"{name}.svg").unlink()
        assert redraw(tmp_path / f"{name}.json") == tmp_path / f"{name}.svg"
        assert (tmp_path / f"{name}.svg").read_text() == drawn
    assert "kafka-share-eos benchmarks" in texts(ET.parse(tmp_path / "full.svg").getroot())


def test_save_without_matplotlib_names_the_charts_extra_before_running(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "bench", "--only", "upsert",
         "--save", str(tmp_path / "run")],
        capture_output=True, text=True, timeout=150,
        env=without(("matplotlib",), tmp_path / "site"),
    )
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        "kafka-share-eos: matplotlib is not installed (used by bench --save): "
        "pip install 'kafka-share-eos[charts]'"
    ]
    assert not list(tmp_path.glob("run.*"))
