"""Per-batch reports of a strategy: one log line per batch, running totals, the metrics file."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pytest
from helpers.batches import source_rows

from kafka_share_eos.strategies import BatchReport, IdempotentUpsertSink


@pytest.mark.timeout(60)
def test_reports_are_logged_one_line_per_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sink = IdempotentUpsertSink.sql(
        f"sqlite:///{tmp_path / 'r.db'}", "t", key_columns=["id"], create_table=True, name="orders"
    )
    frame = pd.DataFrame({"id": [1, 2, 2, 3], "note": ["x", "y", "y", "z"]})
    with caplog.at_level(logging.INFO, logger="kafka_share_eos.strategies"):
        first = sink.apply(frame, 0)
        second = sink.apply(frame, 1)
    assert first == BatchReport(0, 4, 1, 0, 3, "rows", first.seconds)
    assert second == BatchReport(1, 4, 1, 3, 0, "rows", second.seconds)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert lines[1].startswith(
        "orders batch 1: 4 in, 1 duplicate in batch, 3 already applied, 0 written via rows"
    )
    assert (sink.totals.batches, sink.totals.rows_in, sink.totals.rows_written) == (2, 8, 3)
    assert second.duplicates == 4
    sink.close()


def test_an_unwritable_metrics_path_is_reported_once_and_the_batches_are_applied(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 't.db'}", "t", create_table=True,
                                    metrics_path=str(blocker / "metrics.jsonl"))
    for batch_id in range(3):
        rows = source_rows(topic="t", partition=0, offset=[batch_id])
        assert sink.apply(rows, batch_id).rows_written == 1
    warnings = [r for r in caplog.records if "cannot write the batch metrics" in r.getMessage()]
    assert len(warnings) == 1
