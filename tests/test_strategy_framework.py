"""The strategy framework without Spark: identity, in-batch deduplication, inputs, reports."""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from kafka_share_eos.sinks import keep_latest
from kafka_share_eos.strategies import (
    SOURCE_IDENTITY,
    BatchReport,
    IdempotentUpsertSink,
    MissingColumnsError,
    RecordIdentity,
    SinkConfigurationError,
    as_arrow,
)

pytestmark = pytest.mark.timeout(60)


def test_default_identity_keeps_first_delivery_in_batch_order() -> None:
    table = pa.table(
        {
            "topic": ["t"] * 5,
            "partition": [0, 1, 0, 0, 1],
            "offset": [7, 7, 8, 7, 7],
            "deliveryCount": [1, 1, 1, 2, 3],
        }
    )
    unique = RecordIdentity().deduplicate(table)
    assert unique.to_pylist() == [
        {"topic": "t", "partition": 0, "offset": 7, "deliveryCount": 1},
        {"topic": "t", "partition": 1, "offset": 7, "deliveryCount": 1},
        {"topic": "t", "partition": 0, "offset": 8, "deliveryCount": 1},
    ]


def test_versions_highest_wins_ties_go_to_the_later_row_nulls_lose() -> None:
    table = pa.table(
        {
            "k": ["a", "b", "a", "c", "b", "a", "c"],
            "v": [1, 5, 3, None, 5, 2, 0],
            "payload": ["a1", "b5", "a3", "cN", "b5-late", "a2", "c0"],
        }
    )
    picked = keep_latest(table, ["k"], "v").to_pylist()
    assert sorted((r["k"], r["payload"]) for r in picked) == [
        ("a", "a3"),
        ("b", "b5-late"),
        ("c", "c0"),
    ]


def test_table_without_duplicates_is_returned_as_is() -> None:
    table = pa.table({"k": [3, 1, 2], "v": [1, 1, 1]})
    assert keep_latest(table, ["k"], "v") is table


def test_identity_options() -> None:
    assert RecordIdentity.of().key_columns == SOURCE_IDENTITY
    assert RecordIdentity.of("account", "seq") == RecordIdentity(("account",), "seq")
    assert RecordIdentity.of(["a", "b"]).required_columns == ("a", "b")
    with pytest.raises(SinkConfigurationError, match="at least one"):
        RecordIdentity(())
    with pytest.raises(SinkConfigurationError, match="repeats"):
        RecordIdentity(("a", "a"))


def test_missing_columns_are_named() -> None:
    with pytest.raises(MissingColumnsError) as error:
        RecordIdentity(("account", "region"), "seq").check_columns(["account", "x"], "batch")
    assert error.value.missing == ("region", "seq")
    assert "batch lacks column(s) ['region', 'seq']; available columns: ['account', 'x']" in str(
        error.value
    )


def test_inputs_arrow_record_batch_and_pandas() -> None:
    table = pa.table({"a": [1, 2]})
    assert as_arrow(table) is table
    assert as_arrow(table.to_batches()[0]).equals(table)
    assert as_arrow(pd.DataFrame({"a": [1, 2]})).equals(table)
    with pytest.raises(TypeError, match="not list"):
        as_arrow([1, 2])


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
