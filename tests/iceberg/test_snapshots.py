"""The snapshot properties: every application's watermark carried forward, found past other
engines' snapshots, and each application's own commits listed."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog

from kafka_share_eos.iceberg.snapshots import (
    APPLICATION,
    BATCH,
    QUERY,
    TRANSACTION,
    CommitRecord,
    commit_record,
    commits_of,
    transaction_snapshot,
)


def test_a_commit_carries_every_watermark_and_raises_only_its_own() -> None:
    record = CommitRecord({"a": 7, "b": 3})

    properties = record.properties("b", 4, "query-1")

    assert properties == {
        APPLICATION: "b", BATCH: "4", QUERY: "query-1",
        "kafka-share-eos.committed.a": "7", "kafka-share-eos.committed.b": "4",
    }
    assert QUERY not in record.properties("c", 0, None)
    assert TRANSACTION not in properties
    assert record.properties("c", 0, None, "kse:c:0:ab")[TRANSACTION] == "kse:c:0:ab"
    assert record.committed("a") == 7
    assert record.committed("c") is None


def test_the_watermarks_are_found_past_another_engines_snapshots(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    catalog = open_catalog(catalog_config(request, tmp_path, "sqlite"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", pa.schema([("id", pa.int64())]))
    assert commit_record(table) == CommitRecord()
    rows = pa.table({"id": [1]})
    table.append(rows, snapshot_properties=CommitRecord({"b": 2}).properties("a", 5, None))
    toolkit = table.current_snapshot()
    table.append(rows)  # another writer, no properties

    record = commit_record(table)

    assert record.watermarks == {"a": 5, "b": 2}
    assert toolkit is not None and record.snapshot_id == toolkit.snapshot_id
    assert commits_of(table, "a") == [(toolkit.snapshot_id, 5)]
    assert commits_of(table, "b") == []


def test_a_transactions_snapshot_is_found_by_its_id_while_the_table_holds_it(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    catalog = open_catalog(catalog_config(request, tmp_path, "sqlite"))
    catalog.create_namespace("db")
    table = catalog.create_table("db.events", pa.schema([("id", pa.int64())]))
    rows = pa.table({"id": [1]})
    table.append(rows, snapshot_properties=CommitRecord().properties("a", 0, None, "kse:a:0:1"))
    first = table.current_snapshot()
    table.append(rows, snapshot_properties=CommitRecord({"a": 0}).properties(
        "a", 1, None, "kse:a:1:2"))

    found = transaction_snapshot(table, "kse:a:0:1")

    assert first is not None and found is not None
    assert found.snapshot_id == first.snapshot_id
    assert transaction_snapshot(table, "kse:a:2:3") is None
