"""Each example runs end to end against the embedded broker and leaves exactly-once results."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, QueryBuilder

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_delta_dedup_pipeline_appends_every_event_once(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "delta_dedup_pipeline.py"),
            "--events",
            "300",
            "--workdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    events = pa.table(
        QueryBuilder()
        .register("e", DeltaTable(str(tmp_path / "events")))
        .execute("SELECT reading FROM e")
    )
    readings = sorted(events.column("reading").to_pylist())
    assert readings == sorted(f"reading {i}" for i in range(300))
    assert "300 appended" in result.stdout
