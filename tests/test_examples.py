"""Each example runs end to end against the embedded broker and leaves exactly-once results."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.delta import read_delta
from helpers.scripts import run_python

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_delta_dedup_pipeline_appends_every_event_once(tmp_path: Path) -> None:
    result = run_python(
        str(EXAMPLES / "delta_dedup_pipeline.py"), "--events", "300", "--workdir", str(tmp_path)
    )
    events = read_delta(str(tmp_path / "events"), "SELECT reading FROM t")
    readings = sorted(events.column("reading").to_pylist())
    assert readings == sorted(f"reading {i}" for i in range(300))
    assert "300 appended" in result.stdout
