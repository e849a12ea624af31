"""The Delta append sink on real Delta tables: which batches it already appended."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import delta_rows, records

from kafka_share_eos.sinks.delta_append import DeltaAppendSink

pytestmark = pytest.mark.timeout(120)


def test_a_sink_knows_its_own_last_batch_until_another_writer_commits(tmp_path: Path) -> None:
    """Checking "already appended?" skips the log only while the table is at its own commit."""
    uri = str(tmp_path / "sink")
    sink = DeltaAppendSink(uri, app_id="app")
    assert sink(records(("t", 0, 1)), 0)
    assert sink(records(("t", 0, 2)), 1)
    assert not sink(records(("t", 0, 2)), 1)
    # Another writer under the same app_id records batch 5; a refreshed handle sees it.
    DeltaAppendSink(uri, app_id="app")(records(("t", 0, 3)), 5)
    table = sink.location.table()
    assert table is not None
    assert sink.location.transaction_version(table, "app") == 5
    assert not sink(records(("t", 0, 4)), 4)
    assert sorted(delta_rows(uri)) == [("t", 0, 1), ("t", 0, 2), ("t", 0, 3)]
