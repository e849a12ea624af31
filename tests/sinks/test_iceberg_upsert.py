"""The Iceberg upsert writer on pyiceberg's SQL catalog, on SQLite and on PostgreSQL: each record
once, each batch committed once (a replay, a lost answer, snapshots expired in between, another
application's commits), a lost commit race decided again, and the tables it refuses."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.iceberg import (
    BACKENDS,
    LosesAnswers,
    OtherWriterFirst,
    batches_committed,
    catalog_config,
    load,
    offsets,
    open_catalog,
    rows_of,
)
from helpers.upsert_rows import records
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat

from kafka_share_eos.errors import (
    AppIdConflictError,
    DatabaseUnreachableError,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)
from kafka_share_eos.iceberg.snapshots import commits_of
from kafka_share_eos.strategies import IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, request.param)


def sink(config: dict[str, str], **options: Any) -> IdempotentUpsertSink:
    options.setdefault("create_table", True)
    return IdempotentUpsertSink.iceberg("db.events", catalog=config, **options)


def run(offsets_of: range, partition: int = 0) -> pa.Table:
    return records([(partition, o) for o in offsets_of])


def test_a_replayed_batch_is_skipped_without_a_snapshot(config: dict[str, str]) -> None:
    upsert = sink(config, app_id="a")
    first = upsert.apply(run(range(6)), 0)
    again = upsert.apply(run(range(6)), 0)
    later = upsert.apply(run(range(4, 9)), 1)

    assert (first.rows_written, first.write_path) == (6, "append")
    assert (again.rows_written, again.already_applied, again.write_path) == (0, 6, "skipped-batch")
    assert (later.rows_written, later.already_applied) == (3, 2)
    assert offsets(config) == [(0, o) for o in range(9)]
    assert batches_committed(config) == ["0", "1"]


def test_every_snapshot_carries_the_batch_and_every_applications_watermark(
    config: dict[str, str],
) -> None:
    sink(config, app_id="a").apply(run(range(3)), 4)
    sink(config, app_id="b").apply(run(range(3, 5)), 0)

    summary = load(config).current_snapshot().summary.additional_properties  # type: ignore[union-attr]
    assert summary["kafka-share-eos.application"] == "b"
    assert summary["kafka-share-eos.batch"] == "0"
    assert summary["kafka-share-eos.committed.a"] == "4"
    assert summary["kafka-share-eos.committed.b"] == "0"
    assert "kafka-share-eos.query" not in summary


def test_a_batch_whose_commit_answer_was_lost_is_not_committed_again(
    config: dict[str, str],
) -> None:
    properties = {k: v for k, v in config.items() if k != "name"}
    catalog = LosesAnswers(config["name"], **properties)
    upsert = IdempotentUpsertSink.iceberg("db.events", catalog=catalog, create_table=True,
                                          app_id="a")
    upsert.apply(run(range(3)), 0)
    LosesAnswers.lose_next = True

    with pytest.raises(ConnectionError, match="answer was lost"):
        upsert.apply(run(range(3, 6)), 1)
    replayed = upsert.apply(run(range(3, 6)), 1)

    assert replayed.write_path == "skipped-batch"
    assert offsets(config) == [(0, o) for o in range(6)]
    assert batches_committed(config) == ["0", "1"]


def test_snapshot_expiry_between_a_commit_and_its_replay_forgets_nothing(
    config: dict[str, str],
) -> None:
    a, b = sink(config, app_id="a"), sink(config, app_id="b")
    a.apply(run(range(5)), 0)
    a.apply(run(range(5, 10)), 1)
    b.apply(run(range(10, 12)), 0)
    table = load(config)
    table.maintenance.expire_snapshots().older_than(datetime.now(UTC) + timedelta(1)).commit()
    assert commits_of(load(config), "a") == []  # a's snapshots are gone

    replayed = a.apply(run(range(5, 10)), 1)

    assert replayed.write_path == "skipped-batch"
    assert offsets(config) == [(0, o) for o in range(12)]
    assert batches_committed(config) == ["0"]  # b's, the one left
    with pytest.raises(AppIdConflictError, match="already holds batch 1"):
        a.apply(run(range(20, 22)), 0)


def test_a_higher_version_replaces_a_row_and_a_lower_one_never_does(
    config: dict[str, str],
) -> None:
    upsert = sink(config, key_columns=["id"], version_column="version")

    def batch(ids: list[int], versions: list[int], tag: str) -> pa.Table:
        return pa.table({"id": ids, "version": versions, "name": [f"{tag}{i}" for i in ids]})

    upsert.apply(batch([1, 2, 3], [2, 2, 2], "first"), 0)
    newer = upsert.apply(batch([1, 2, 4], [3, 1, 1], "second"), 1)
    same = upsert.apply(batch([3], [2], "third"), 2)

    assert (newer.rows_written, newer.already_applied, newer.write_path) == (2, 1, "overwrite")
    assert (same.rows_written, same.already_applied) == (0, 1)
    stored = sorted(rows_of(config).to_pylist(), key=lambda row: row["id"])
    assert stored == [
        {"id": 1, "version": 3, "name": "second1"},
        {"id": 2, "version": 2, "name": "first2"},
        {"id": 3, "version": 2, "name": "first3"},
        {"id": 4, "version": 1, "name": "second4"},
    ]
    # The replacement is one snapshot (the rewrite and the new rows), carrying its batch.
    assert batches_committed(config) == ["0", "1"]


def test_two_applications_interleaving_on_one_table_store_every_record_once(
    config: dict[str, str],
) -> None:
    a, b = sink(config, app_id="a"), sink(config, app_id="b")
    a.apply(run(range(0, 10)), 0)
    b.apply(run(range(5, 15)), 0)
    a.apply(run(range(10, 20)), 1)
    b.apply(run(range(0, 5)), 0)  # b's replay: skipped whatever it brings of a's
    b.apply(pa.concat_tables([run(range(0, 3)), run(range(20, 25))]), 1)

    assert offsets(config) == [(0, o) for o in range(25)]


def test_the_loser_of_a_commit_race_decides_again_on_the_winners_snapshot(
    config: dict[str, str],
) -> None:
    properties = {k: v for k, v in config.items() if k != "name"}
    catalog = OtherWriterFirst(config["name"], **properties)
    a = IdempotentUpsertSink.iceberg("db.events", catalog=catalog, create_table=True, app_id="a")
    b = sink(config, app_id="b")
    a.apply(run(range(3)), 0)
    # b commits offsets 3..7 after a read the table and before a commits 3..9.
    OtherWriterFirst.before_next = lambda: b.apply(run(range(3, 8)), 0)

    report = a.apply(run(range(3, 10)), 1)

    assert (report.rows_written, report.already_applied) == (2, 5)
    assert offsets(config) == [(0, o) for o in range(10)]
    assert [batch for _, batch in commits_of(load(config), "a")] == [0, 1]


def test_a_missing_table_is_refused_unless_created(config: dict[str, str]) -> None:
    with pytest.raises(TargetTableError, match=r"does not exist.*create_table=True"):
        sink(config, create_table=False)
    with pytest.raises(SinkConfigurationError, match="with its namespace"):
        IdempotentUpsertSink.iceberg("events", catalog=config)


def test_key_columns_the_table_lacks_are_refused(config: dict[str, str]) -> None:
    sink(config).apply(run(range(2)), 0)

    with pytest.raises(MissingColumnsError, match="customer"):
        sink(config, key_columns=["customer"])


def test_a_table_with_equality_deletes_is_refused(config: dict[str, str], tmp_path: Path) -> None:
    sink(config).apply(run(range(2)), 0)
    deletes = tmp_path / "equality-deletes.parquet"
    pq.write_table(pa.table({"offset": pa.array([1], pa.int64())}), deletes)
    table = load(config)
    written = DataFile.from_args(
        content=DataFileContent.EQUALITY_DELETES, file_path=deletes.as_uri(),
        file_format=FileFormat.PARQUET, partition={}, record_count=1,
        file_size_in_bytes=os.path.getsize(deletes),
        equality_ids=[table.schema().find_field("offset").field_id],
    )
    written.spec_id = 0
    with table.transaction() as transaction, \
            transaction.update_snapshot().fast_append() as append:
        append.append_data_file(written)

    with pytest.raises(TargetTableError, match="1 equality delete"):
        sink(config)


def test_a_catalog_object_is_used_as_given(config: dict[str, str]) -> None:
    catalog = open_catalog(config)
    upsert = IdempotentUpsertSink.iceberg("db.events", catalog=catalog, create_table=True)
    upsert.apply(run(range(3)), 0)
    upsert.close()

    assert catalog.load_table("db.events").scan().to_arrow().num_rows == 3


def test_two_applications_writing_at_once_store_every_record_once(config: dict[str, str]) -> None:
    """Two sinks in two threads, each redelivering half of the other's records, race for every
    commit: the losers decide again on the winners' snapshots."""
    sink(config, app_id="setup").apply(run(range(1)), 0)
    apps = {name: sink(config, app_id=name, max_commit_attempts=50) for name in ("a", "b")}
    failures: list[BaseException] = []

    def write(name: str, start: int) -> None:
        try:
            for batch in range(8):
                low = start + 10 * batch
                apps[name].apply(run(range(low, low + 15)), batch)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=write, args=(name, start))
               for name, start in (("a", 0), ("b", 5))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=100)

    assert not failures, failures
    assert offsets(config) == [(0, o) for o in range(5 + 10 * 7 + 15)]
    for app in ("a", "b"):  # a batch the other application wrote whole commits nothing
        batches = [batch for _, batch in commits_of(load(config), app)]
        assert batches == sorted(set(batches))


@pytest.mark.parametrize("uri", [
    "postgresql+psycopg://app:secret@127.0.0.1:1/shop", "sqlite:////no/such/folder/catalog.db",
])
def test_a_catalog_database_that_cannot_be_reached_is_named(uri: str, tmp_path: Path) -> None:
    config = {"type": "sql", "uri": uri, "warehouse": tmp_path.as_uri()}

    with pytest.raises(DatabaseUnreachableError, match="could not connect to") as refused:
        IdempotentUpsertSink.iceberg("db.events", catalog=config)

    assert "secret" not in str(refused.value)


def test_batch_columns_are_cast_to_the_tables_types_or_refused(config: dict[str, str]) -> None:
    upsert = sink(config, key_columns=["id"])
    upsert.apply(pa.table({"id": pa.array([1], pa.int32()), "amount": pa.array([5], pa.int64())}),
                 0)

    # Spark's long into the table's int while the values fit, a missing column left null.
    upsert.apply(pa.table({"id": pa.array([2, 3], pa.int64())}), 1)
    with pytest.raises(SinkConfigurationError, match=r"'id' of the batch is int64.*not in range"):
        upsert.apply(pa.table({"id": pa.array([2**40], pa.int64())}), 2)
    with pytest.raises(SinkConfigurationError, match="'amount' of the batch is string"):
        upsert.apply(pa.table({"id": pa.array([4], pa.int32()), "amount": ["five"]}), 2)
    with pytest.raises(MissingColumnsError, match=r"lacks column\(s\) \['note'\]"):
        upsert.apply(pa.table({"id": pa.array([4], pa.int32()), "note": ["new"]}), 2)

    stored = sorted(rows_of(config).to_pylist(), key=lambda row: row["id"])
    assert stored == [{"id": 1, "amount": 5}, {"id": 2, "amount": None},
                      {"id": 3, "amount": None}]


def test_the_writer_says_which_records_the_table_holds(config: dict[str, str]) -> None:
    upsert = sink(config)
    writer = upsert.writer
    assert writer.applied(run(range(2))) == [False, False]  # type: ignore[attr-defined]

    upsert.apply(run(range(3)), 0)

    asked = pa.concat_tables([run(range(1, 5)), run(range(1), partition=1)])
    assert writer.applied(asked) == [True, True, False, False, False]  # type: ignore[attr-defined]
