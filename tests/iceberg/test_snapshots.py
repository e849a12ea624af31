"""The snapshot properties: every application's watermark carried forward, found past other
engines' snapshots and, through the toolkit's tag, once every snapshot that led to them
expired, and each application's own commits listed."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog
from pyiceberg.catalog import Catalog

from kafka_share_eos.iceberg.snapshots import (
    APPLICATION,
    BATCH,
    QUERY,
    TAG,
    TRANSACTION,
    CommitRecord,
    commit_marked,
    commit_record,
    commits_of,
    transaction_snapshot,
)


@pytest.fixture
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Catalog:
    """A SQL catalog on SQLite holding the empty table ``db.events``."""
    catalog = open_catalog(catalog_config(request, tmp_path, "sqlite"))
    catalog.create_namespace("db")
    catalog.create_table("db.events", pa.schema([("id", pa.int64())]))
    return catalog


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
    catalog: Catalog,
) -> None:
    table = catalog.load_table("db.events")
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
    catalog: Catalog,
) -> None:
    table = catalog.load_table("db.events")
    rows = pa.table({"id": [1]})
    table.append(rows, snapshot_properties=CommitRecord().properties("a", 0, None, "kse:a:0:1"))
    first = table.current_snapshot()
    table.append(rows, snapshot_properties=CommitRecord({"a": 0}).properties(
        "a", 1, None, "kse:a:1:2"))

    found = transaction_snapshot(table, "kse:a:0:1")

    assert first is not None and found is not None
    assert found.snapshot_id == first.snapshot_id
    assert transaction_snapshot(table, "kse:a:2:3") is None


def test_the_watermarks_outlive_the_expiry_of_every_snapshot_under_other_engines_commits(
    catalog: Catalog,
) -> None:
    table = catalog.load_table("db.events")
    rows = pa.table({"id": [1]})
    for batch in range(2):
        transaction = table.transaction()
        transaction.append(rows, snapshot_properties=CommitRecord(
            {"b": 2, "a": batch - 1} if batch else {"b": 2}).properties("a", batch, None))
        commit_marked(transaction)
        table = catalog.load_table("db.events")
    toolkit = table.current_snapshot()
    table.append(pa.table({"id": [2]}))  # another engine's commits on top
    table.delete("id = 2")
    table.append(rows)
    table.maintenance.expire_snapshots().older_than(datetime.now(UTC) + timedelta(1)).commit()

    table = catalog.load_table("db.events")
    current = table.current_snapshot()
    assert toolkit is not None and current is not None
    assert {s.snapshot_id for s in table.snapshots()} == {toolkit.snapshot_id,
                                                          current.snapshot_id}
    assert current.parent_snapshot_id not in {s.snapshot_id for s in table.snapshots()}
    assert table.refs()[TAG].snapshot_id == toolkit.snapshot_id
    assert commit_record(table) == CommitRecord({"a": 1, "b": 2}, toolkit.snapshot_id)
    assert table.scan().to_arrow().num_rows == 3
