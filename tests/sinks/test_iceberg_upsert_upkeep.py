"""The Iceberg upsert beside everything else that happens to its table, on pyiceberg's SQL
catalog (SQLite, PostgreSQL) and on Iceberg's REST catalog server: compaction and snapshot
expiry running in a thread while batches are written, other engines' appends, overwrites and
deletes between batches, and another writer's schema changes. Every record lands once, every
batch is committed once, and a replay is still known for one after the history under it
expired."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.iceberg import BACKENDS, catalog_config, load, offsets, open_catalog, rows_of
from helpers.iceberg_upkeep import IcebergUpkeep
from helpers.upsert_rows import records
from pyiceberg.types import LongType, StringType

from kafka_share_eos.errors import AppIdConflictError, MissingColumnsError, TargetTableError
from kafka_share_eos.iceberg.snapshots import TAG, commit_record
from kafka_share_eos.strategies import IdempotentUpsertSink

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(params=[*BACKENDS, "rest"])
def where(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[dict[str, str], str]:
    """A catalog's configuration and a table identifier no other test uses."""
    if request.param == "rest":
        return request.getfixturevalue("iceberg_rest_catalog"), f"ns_{uuid.uuid4().hex[:8]}.events"
    return catalog_config(request, tmp_path, request.param), "db.events"


def run(offsets_of: range, partition: int = 0) -> pa.Table:
    return records([(partition, o) for o in offsets_of])


def expire_all_but_current(config: dict[str, str], table: str) -> None:
    load(config, table).maintenance.expire_snapshots().older_than(
        datetime.now(UTC) + timedelta(1)).commit()


def test_compaction_and_expiry_beside_the_writes_lose_no_record_and_no_watermark(
    where: tuple[dict[str, str], str],
) -> None:
    config, table = where
    upsert = IdempotentUpsertSink.iceberg(table, catalog=config, create_table=True, app_id="a",
                                          max_commit_attempts=30)
    upsert.apply(run(range(8)), 0)
    with IcebergUpkeep(open_catalog(config), table) as upkeep:
        for batch in range(1, 12):
            # Each batch brings three records of the one before (redeliveries).
            upsert.apply(run(range(5 * batch, 5 * batch + 8)), batch)
            if batch % 3 == 0:
                upkeep.wait_caught_up()
        upkeep.wait_caught_up()
        upkeep.finish()

    assert offsets(config, table) == [(0, o) for o in range(5 * 11 + 8)]
    assert upkeep.compactions >= 4 and upkeep.expiries >= 4
    assert commit_record(load(config, table)).committed("a") == 11
    assert upsert.apply(run(range(55, 63)), 11).write_path == "skipped-batch"
    with pytest.raises(AppIdConflictError, match="already holds batch 11"):
        upsert.apply(run(range(70, 72)), 10)
    assert offsets(config, table) == [(0, o) for o in range(5 * 11 + 8)]


def test_other_engines_writes_and_an_expiry_between_batches_keep_every_batch_once(
    where: tuple[dict[str, str], str],
) -> None:
    config, table = where
    upsert = IdempotentUpsertSink.iceberg(table, catalog=config, create_table=True, app_id="a")
    upsert.apply(run(range(6)), 0)
    load(config, table).append(run(range(100, 104), partition=9))  # plain pyiceberg commits
    upsert.apply(run(range(4, 10)), 1)
    load(config, table).overwrite(run(range(100, 102), partition=9),
                                  overwrite_filter="partition = 9")
    load(config, table).delete("partition = 9 AND offset = 100")
    expire_all_but_current(config, table)
    current = load(config, table)
    tagged = current.refs()[TAG].snapshot_id
    assert [s.snapshot_id for s in current.snapshots()] == [
        tagged, current.current_snapshot().snapshot_id]  # type: ignore[union-attr]

    replayed = upsert.apply(run(range(4, 10)), 1)
    later = upsert.apply(run(range(8, 12)), 2)

    assert (replayed.write_path, replayed.rows_written) == ("skipped-batch", 0)
    assert (later.rows_written, later.already_applied) == (2, 2)
    assert offsets(config, table) == [*((0, o) for o in range(12)), (9, 101)]
    with pytest.raises(AppIdConflictError, match="already holds batch 2"):
        upsert.apply(run(range(20, 22)), 0)


def batch(ids: list[int], **columns: list[Any]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), **columns})


@pytest.fixture
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, "sqlite")


@pytest.fixture
def upsert(config: dict[str, str]) -> IdempotentUpsertSink:
    """An upsert on the key ``id`` into ``db.events``, created by its first batch."""
    return IdempotentUpsertSink.iceberg("db.events", catalog=config, key_columns=["id"],
                                        create_table=True)


def test_a_column_another_writer_dropped_or_renamed_refuses_the_batch_naming_both(
    config: dict[str, str], upsert: IdempotentUpsertSink
) -> None:
    upsert.apply(batch([1], note=["a"], kind=["x"]), 0)
    with load(config).update_schema() as update:
        update.delete_column("note")

    with pytest.raises(MissingColumnsError,
                       match=r"iceberg:c\w+\.db\.events lacks column\(s\) \['note'\]"):
        upsert.apply(batch([2], note=["b"], kind=["y"]), 1)
    with load(config).update_schema() as update:
        update.rename_column("kind", "category")
    with pytest.raises(MissingColumnsError, match=r"db\.events lacks column\(s\) \['kind'\]"):
        upsert.apply(batch([2], kind=["y"]), 1)

    assert rows_of(config).to_pylist() == [{"id": 1, "category": "x"}]
    assert upsert.apply(batch([2], category=["y"]), 1).rows_written == 1


def ids(config: dict[str, str]) -> list[int]:
    return sorted(load(config).scan(selected_fields=("id",)).to_arrow()["id"].to_pylist())


def test_a_required_column_another_writer_added_refuses_the_batch_naming_it(
    config: dict[str, str], upsert: IdempotentUpsertSink
) -> None:
    upsert.apply(batch([1]), 0)
    with load(config).update_schema(allow_incompatible_changes=True) as update:
        update.add_column("region", StringType(), required=True)

    with pytest.raises(TargetTableError,
                       match=r"db\.events requires column\(s\) \['region'\], which the batch"):
        upsert.apply(batch([2]), 1)

    # The rows written before the column was added have none: only the ids are read back.
    assert ids(config) == [1]
    assert upsert.apply(batch([2], region=["eu"]), 1).rows_written == 1
    assert ids(config) == [1, 2]


def test_an_optional_column_added_and_a_type_widened_take_the_next_batches(
    config: dict[str, str], upsert: IdempotentUpsertSink
) -> None:
    upsert.apply(batch([1], amount=pa.array([5], pa.int32())), 0)
    with load(config).update_schema() as update:
        update.add_column("note", StringType())
        update.update_column("amount", LongType())

    upsert.apply(batch([2], amount=pa.array([6], pa.int32())), 1)
    upsert.apply(batch([3], amount=pa.array([2**40], pa.int64()), note=["big"]), 2)

    stored = sorted(rows_of(config).to_pylist(), key=lambda row: row["id"])
    assert stored == [{"id": 1, "amount": 5, "note": None}, {"id": 2, "amount": 6, "note": None},
                      {"id": 3, "amount": 2**40, "note": "big"}]
