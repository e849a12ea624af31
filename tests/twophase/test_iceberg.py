"""The Iceberg participant on pyiceberg's SQL catalog (SQLite and PostgreSQL): staged records stay
out of the table until the commit adds them in one snapshot carrying the transaction, a commit
repeated (its answer lost, or after its snapshot expired) adds nothing, a restarted coordinator
commits what a dead one decided and rolls back what it did not, an abort leaves no file, and
records two transactions staged land once."""

from __future__ import annotations

import pickle
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.accounts import payments, record_keys
from helpers.iceberg import (
    BACKENDS,
    LosesAnswers,
    OtherWriterFirst,
    catalog_config,
    load,
    rows_of,
    sql_catalog,
)

from kafka_share_eos import IcebergParticipant
from kafka_share_eos.errors import AppIdConflictError, MissingColumnsError, TargetTableError
from kafka_share_eos.iceberg.snapshots import APPLICATION, BATCH, TRANSACTION
from kafka_share_eos.twophase import (
    Decision,
    FileDecisionLog,
    Outcome,
    Transaction,
    TransactionCoordinator,
)
from kafka_share_eos.twophase.delta_staging import STAGING_DIR

pytestmark = pytest.mark.timeout(120)

KEYS = ["topic", "partition", "offset"]
TABLE = "db.payments"


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, request.param)


def table_keys(config: dict[str, str]) -> list[tuple[int, int]]:
    """(partition, offset) of every row, duplicates kept."""
    rows = rows_of(config, TABLE)
    return sorted(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True))


def left_behind(config: dict[str, str]) -> list[str]:
    """Manifests and staged data files no snapshot lists."""
    table = load(config, TABLE)
    root = Path(table.location().removeprefix("file://"))
    listed = {task.file.file_path.rsplit("/", 1)[-1] for task in table.scan().plan_files()}
    return sorted([p.name for p in (root / STAGING_DIR).glob("*.json")]
                  + [p.name for p in root.glob("*.parquet") if p.name not in listed])


def snapshots(config: dict[str, str]) -> int:
    return len(load(config, TABLE).snapshots())


def test_staged_records_stay_out_until_the_commit_adds_them_in_one_snapshot(
    config: dict[str, str],
) -> None:
    participant = IcebergParticipant(TABLE, catalog=config)
    records = payments(6)
    txn = Transaction.new("pay", 0, KEYS)

    token = participant.prepare(records, txn)

    assert (token.participant, token.rows_written, token.data["number"]) == ("iceberg", 6, 0)
    assert table_keys(config) == [] and snapshots(config) == 0
    assert len(left_behind(config)) == 2  # the manifest and the staged file
    assert participant.commit(token) == 0
    assert participant.commit(token) == 0  # a repeated commit finds its own snapshot

    assert table_keys(config) == record_keys(records)
    assert snapshots(config) == 1
    summary = load(config, TABLE).current_snapshot().summary  # type: ignore[union-attr]
    assert (summary[APPLICATION], summary[BATCH], summary[TRANSACTION]) == ("pay", "0", txn.txid)
    assert participant.applied(records.select(KEYS)) == [True] * 6
    assert left_behind(config) == []


def test_a_replayed_batch_stages_nothing_and_an_overlapping_one_its_new_records(
    config: dict[str, str],
) -> None:
    participant = IcebergParticipant(TABLE, catalog=config)
    records = payments(9)
    participant.commit(participant.prepare(records.slice(0, 6), Transaction.new("pay", 0, KEYS)))

    replay = participant.prepare(records.slice(0, 6), Transaction.new("pay", 0, KEYS))
    assert (replay.rows_written, replay.data) == (0, {"files": []})
    assert participant.commit(replay) == 0
    later = participant.prepare(records.slice(3, 6), Transaction.new("pay", 1, KEYS))
    assert (later.rows_written, later.data["number"]) == (3, 1)
    participant.commit(later)

    assert table_keys(config) == record_keys(records)
    assert snapshots(config) == 2


def test_a_commit_whose_answer_was_lost_adds_nothing_when_repeated(
    config: dict[str, str],
) -> None:
    participant = IcebergParticipant(TABLE, catalog=sql_catalog(config, LosesAnswers))
    records = payments(5)
    token = participant.prepare(records, Transaction.new("pay", 0, KEYS))
    LosesAnswers.lose_next = True

    with pytest.raises(ConnectionError, match="answer was lost"):
        participant.commit(token)
    assert participant.commit(token) == 0

    assert table_keys(config) == record_keys(records)
    assert snapshots(config) == 1
    assert left_behind(config) == []


def test_a_repeated_commit_after_its_snapshot_expired_finds_its_files(
    config: dict[str, str],
) -> None:
    participant = IcebergParticipant(TABLE, catalog=config)
    records = payments(6)
    first = participant.prepare(records.slice(0, 3), Transaction.new("pay", 0, KEYS))
    participant.commit(first)
    # Left where a crash after the commit and before the clean-up leaves it.
    participant._staging(first.data).write(first.txid, dict(first.data))
    participant.commit(participant.prepare(records.slice(3, 3), Transaction.new("pay", 1, KEYS)))
    load(config, TABLE).maintenance.expire_snapshots().older_than(
        datetime.now(UTC) + timedelta(1)).commit()

    assert participant.commit(first) == 0

    assert table_keys(config) == record_keys(records)
    assert left_behind(config) == []


def test_a_restarted_coordinator_commits_what_was_decided_and_rolls_back_the_rest(
    config: dict[str, str], tmp_path: Path,
) -> None:
    log = FileDecisionLog(str(tmp_path / "decisions"))
    dead = IcebergParticipant(TABLE, catalog=config)
    records = payments(8)
    decided_txn = Transaction.new("pay", 0, KEYS)
    decided = dead.prepare(records.slice(0, 5), decided_txn)
    log.write(Decision(decided_txn.txid, 0, Outcome.COMMIT, (decided,)))
    dead.prepare(records.slice(5, 3), Transaction.new("pay", 1, KEYS))  # never decided

    restarted = TransactionCoordinator(log, [pickle.loads(pickle.dumps(dead))], "pay")
    report = restarted.recover()

    assert ([t.txid for t in report.committed], len(report.aborted)) == ([decided_txn.txid], 1)
    assert table_keys(config) == record_keys(records.slice(0, 5))
    assert snapshots(config) == 1
    assert left_behind(config) == []
    result = restarted.run(records, 2, KEYS)
    assert result.tokens[0].rows_written == 3
    assert table_keys(config) == record_keys(records)


def test_an_abort_deletes_the_staged_files(config: dict[str, str]) -> None:
    participant = IcebergParticipant(TABLE, catalog=config)
    token = participant.prepare(payments(4), Transaction.new("pay", 0, KEYS))
    assert len(left_behind(config)) == 2

    participant.abort(token)
    participant.abort(token)

    assert left_behind(config) == []
    assert participant.recover("kse:pay:") == []
    assert table_keys(config) == []


def test_records_two_transactions_staged_land_once(config: dict[str, str]) -> None:
    one, other = (IcebergParticipant(TABLE, catalog=config) for _ in range(2))
    records = payments(9)
    first = one.prepare(records.slice(0, 6), Transaction.new("a", 0, KEYS))
    second = other.prepare(records.slice(3, 6), Transaction.new("b", 0, KEYS))

    assert one.commit(first) == 0
    assert other.commit(second) == 3  # offsets another application committed since

    assert table_keys(config) == record_keys(records)
    assert left_behind(config) == []


def test_a_batch_of_other_columns_is_refused(config: dict[str, str]) -> None:
    participant = IcebergParticipant(TABLE, catalog=config)
    participant.commit(participant.prepare(payments(2), Transaction.new("pay", 0, KEYS)))

    with pytest.raises(MissingColumnsError, match="extra"):
        participant.prepare(payments(2).append_column("extra", pa.array([1, 2])),
                            Transaction.new("pay", 1, KEYS))
    with pytest.raises(TargetTableError, match="has columns"):
        participant.prepare(payments(2).drop_columns(["amount"]), Transaction.new("pay", 1, KEYS))


def test_a_commit_losing_its_race_leaves_out_what_the_winner_committed(
    config: dict[str, str],
) -> None:
    records = payments(9)
    loser = IcebergParticipant(TABLE, catalog=sql_catalog(config, OtherWriterFirst))
    winner = IcebergParticipant(TABLE, catalog=config)
    token = loser.prepare(records.slice(0, 6), Transaction.new("a", 0, KEYS))
    # The winner commits offsets 3..8 after the loser staged 0..5 and before its snapshot lands.
    OtherWriterFirst.before_next = lambda: winner.commit(
        winner.prepare(records.slice(3, 6), Transaction.new("b", 0, KEYS)))

    assert loser.commit(token) == 3

    assert table_keys(config) == record_keys(records)
    assert left_behind(config) == []


def test_two_applications_on_one_app_id_are_named_and_lose_no_record(
    config: dict[str, str],
) -> None:
    one, other = (IcebergParticipant(TABLE, catalog=config) for _ in range(2))
    records = payments(6)
    first = one.prepare(records.slice(0, 3), Transaction.new("pay", 0, KEYS))
    second = other.prepare(records.slice(3, 3), Transaction.new("pay", 0, KEYS))
    one.commit(first)

    with pytest.raises(AppIdConflictError, match="two applications use app_id 'pay'"):
        other.commit(second)

    assert table_keys(config) == record_keys(records)
    assert left_behind(config) == []
