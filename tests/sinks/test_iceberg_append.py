"""The Iceberg append sink on pyiceberg's SQL catalog, on SQLite and on PostgreSQL: each batch
appended once (a replay, a lost answer, snapshots expired in between), behind the
checkpoint-dedup store each record once, and the tables it refuses."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import (
    BACKENDS,
    LosesAnswers,
    OtherWriterFirst,
    batches_committed,
    catalog_config,
    load,
    offsets,
    sql_catalog,
)
from helpers.upsert_rows import records

from kafka_share_eos import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    IcebergAppendSink,
    SqlDeadLetters,
)
from kafka_share_eos.errors import AppIdConflictError, MissingColumnsError, TargetTableError
from kafka_share_eos.iceberg.snapshots import APPLICATION, QUERY, commits_of

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, request.param)


def run(offsets_of: range, partition: int = 0) -> pa.Table:
    return records([(partition, o) for o in offsets_of])


def test_a_replayed_batch_adds_no_snapshot(config: dict[str, str]) -> None:
    sink = IcebergAppendSink("db.events", catalog=config, create_table=True, app_id="a")

    assert sink(run(range(5)), 0) is True
    assert sink(run(range(5)), 0) is False
    assert sink(run(range(5, 8)), 1) is True
    assert sink(run(range(5, 8)), 1) is False

    assert offsets(config) == [(0, o) for o in range(8)]
    assert batches_committed(config) == ["0", "1"]


def test_a_batch_whose_commit_answer_was_lost_is_not_appended_again(
    config: dict[str, str],
) -> None:
    sink = IcebergAppendSink("db.events", catalog=sql_catalog(config, LosesAnswers),
                             create_table=True, app_id="a")
    sink(run(range(3)), 0)
    LosesAnswers.lose_next = True

    with pytest.raises(ConnectionError, match="answer was lost"):
        sink(run(range(3, 6)), 1)

    assert sink(run(range(3, 6)), 1) is False
    assert offsets(config) == [(0, o) for o in range(6)]
    assert batches_committed(config) == ["0", "1"]


def test_snapshot_expiry_before_a_replay_forgets_no_batch(config: dict[str, str]) -> None:
    a = IcebergAppendSink("db.events", catalog=config, create_table=True, app_id="a")
    b = IcebergAppendSink("db.events", catalog=config, app_id="b")
    a(run(range(4)), 0)
    b(run(range(4, 6)), 0)
    load(config).maintenance.expire_snapshots().older_than(
        datetime.now(UTC) + timedelta(1)).commit()
    assert commits_of(load(config), "a") == []

    assert a(run(range(4)), 0) is False
    assert offsets(config) == [(0, o) for o in range(6)]
    assert a(run(range(6, 8)), 1) is True
    with pytest.raises(AppIdConflictError, match="already holds batch 1"):
        a(run(range(8, 9)), 0)
    assert offsets(config) == [(0, o) for o in range(8)]


def test_a_replay_after_other_engines_commits_and_an_expiry_of_all_before_them_appends_nothing(
    config: dict[str, str],
) -> None:
    """The snapshot that recorded the batch is neither current nor reachable from it once
    expiry cut the history under another engine's commits: the toolkit's tag keeps it."""
    sink = IcebergAppendSink("db.events", catalog=config, create_table=True, app_id="a")
    sink(run(range(4)), 0)
    sink(run(range(4, 8)), 1)
    table = load(config)
    table.append(run(range(100, 102), partition=9))  # another engine, no properties
    table.delete("partition = 9 AND offset = 100")
    load(config).maintenance.expire_snapshots().older_than(
        datetime.now(UTC) + timedelta(1)).commit()

    assert sink(run(range(4, 8)), 1) is False
    assert sink(run(range(8, 10)), 2) is True

    assert offsets(config) == [*((0, o) for o in range(10)), (9, 101)]


def test_a_lost_commit_race_starts_over_on_the_winners_snapshot(config: dict[str, str]) -> None:
    a = IcebergAppendSink("db.events", catalog=sql_catalog(config, OtherWriterFirst),
                          create_table=True, app_id="a")
    b = IcebergAppendSink("db.events", catalog=config, app_id="b")
    a(run(range(2)), 0)
    OtherWriterFirst.before_next = lambda: b(run(range(2, 4)), 0)

    assert a(run(range(4, 6)), 1) is True

    assert offsets(config) == [(0, o) for o in range(6)]
    summary = load(config).current_snapshot().summary.additional_properties  # type: ignore[union-attr]
    assert (summary[APPLICATION], summary["kafka-share-eos.committed.b"]) == ("a", "0")


def test_a_missing_table_and_missing_columns_are_refused(config: dict[str, str]) -> None:
    with pytest.raises(TargetTableError, match="does not exist"):
        IcebergAppendSink("db.events", catalog=config).check_target()
    sink = IcebergAppendSink("db.events", catalog=config, create_table=True,
                             columns=["offset", "nothing"])
    with pytest.raises(MissingColumnsError, match="nothing"):
        sink(run(range(2)), 0)


def test_the_dedup_store_appends_each_record_once_and_a_copy_follows_the_query(
    config: dict[str, str], tmp_path: Path,
) -> None:
    sink = IcebergAppendSink("db.events", catalog=config, create_table=True)
    store = CheckpointDedupStore(str(tmp_path / "ledger"), sink)
    store.apply(run(range(6)), 0)
    store.apply(run(range(3, 9)), 1)
    copy = pickle.loads(pickle.dumps(store))
    copy.sink.bind_streaming_query("query-1")
    report = copy.apply(run(range(6, 12)), 2)
    copy.apply(run(range(6, 12)), 2)

    assert (report.rows_written, report.already_applied) == (3, 3)
    assert offsets(config) == [(0, o) for o in range(12)]
    assert load(config).current_snapshot().summary[QUERY] == "query-1"  # type: ignore[union-attr]


def test_a_row_the_table_cannot_store_is_dead_lettered_and_the_rest_appended(
    config: dict[str, str], tmp_path: Path,
) -> None:
    sink = IcebergAppendSink("db.events", catalog=config, create_table=True)
    letters = SqlDeadLetters(f"sqlite:///{tmp_path / 'letters.db'}")
    store = CheckpointDedupStore(str(tmp_path / "ledger"), sink,
                                 dead_letters=DeadLetterPolicy(letters))
    store.apply(run(range(2)).append_column("n", pa.array([1, 2], pa.int32())), 0)
    wide = pa.array([3, 2**40, 5], pa.int64())  # the middle one does not fit the int column

    report = store.apply(run(range(2, 5)).append_column("n", wide), 1)

    assert (report.rows_written, report.dead_lettered) == (2, 1)
    assert offsets(config) == [(0, 0), (0, 1), (0, 2), (0, 4)]
    assert letters.read()["offset"].to_pylist() == [3]
    letters.close()
