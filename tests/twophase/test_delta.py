"""The Delta participant on real Delta tables: staged records stay out of the table until the
commit adds them under the application transaction, a replayed batch stages nothing, records two
transactions staged land once, an abort leaves no file behind, and any process finds and commits
what another one staged."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.accounts import payments, record_keys
from helpers.delta import read_delta

from kafka_share_eos.errors import AppIdConflictError, ConfigurationError, TargetTableError
from kafka_share_eos.twophase import Transaction, TwoPhaseCommitError, txid_prefix
from kafka_share_eos.twophase.delta import DeltaParticipant, staged_participants
from kafka_share_eos.twophase.delta_staging import STAGING_DIR

pytestmark = pytest.mark.timeout(120)

KEYS = ["topic", "partition", "offset"]


def table_keys(path: str) -> list[tuple[int, int]]:
    keys = read_delta(path, 'SELECT "partition", "offset" FROM t')
    return sorted(zip(keys["partition"].to_pylist(), keys["offset"].to_pylist(), strict=True))


def left_behind(path: str) -> list[str]:
    """Manifests and data files no Delta commit lists."""
    root = Path(path)
    committed = {uri.rsplit("/", 1)[-1] for uri in DeltaTable(path).file_uris()}
    return sorted([p.name for p in (root / STAGING_DIR).glob("*.json")]
                  + [p.name for p in root.glob("*.parquet") if p.name not in committed])


def committed_by_another_app(path: str, rows: pa.Table) -> None:
    participant = DeltaParticipant(path)
    participant.commit(participant.prepare(rows, Transaction.new("setup", 0, KEYS)))


def test_staged_records_stay_out_of_the_table_until_the_commit_adds_them_once(
    delta_path: str,
) -> None:
    participant = DeltaParticipant(delta_path)
    records = payments(6)
    txn = Transaction.new("pay", 0, KEYS)

    token = participant.prepare(records, txn)

    assert (token.participant, token.txid, token.rows_written) == ("delta", txn.txid, 6)
    assert (token.data["app_id"], token.data["version"], token.data["snapshot"]) == ("pay", 1, 0)
    assert table_keys(delta_path) == []
    assert participant.applied(records.select(KEYS)) == [False] * 6
    assert len(left_behind(delta_path)) == 2  # the manifest and the staged file

    assert participant.commit(token) == 0
    version = DeltaTable(delta_path).version()
    assert participant.commit(token) == 0  # a repeated commit finds its own

    table = DeltaTable(delta_path)
    assert table_keys(delta_path) == record_keys(records)
    assert (table.version(), table.transaction_version("pay")) == (version, 1)
    assert table.history(1)[0]["kse.txid"] == txn.txid
    assert participant.applied(records.select(KEYS)) == [True] * 6
    assert left_behind(delta_path) == []


def test_a_replayed_batch_stages_nothing_and_an_overlapping_one_its_new_records(
    delta_path: str,
) -> None:
    participant = DeltaParticipant(delta_path)
    records = payments(9)
    participant.commit(participant.prepare(records.slice(0, 6), Transaction.new("pay", 0, KEYS)))

    replay = participant.prepare(records.slice(0, 6), Transaction.new("pay", 0, KEYS))
    assert (replay.rows_written, replay.data) == (0, {"files": []})
    assert participant.commit(replay) == 0
    overlap = participant.prepare(records.slice(3, 6), Transaction.new("pay", 1, KEYS))
    assert overlap.rows_written == 3
    participant.commit(overlap)

    assert table_keys(delta_path) == record_keys(records)
    assert DeltaTable(delta_path).transaction_version("pay") == 2


def test_an_abort_deletes_what_was_staged_and_leaves_the_table_alone(delta_path: str) -> None:
    participant = DeltaParticipant(delta_path)
    records = payments(6)
    participant.commit(participant.prepare(records.slice(0, 2), Transaction.new("pay", 0, KEYS)))

    token = participant.prepare(records.slice(2, 4), Transaction.new("pay", 1, KEYS))
    participant.abort(token)
    participant.abort(token)  # already gone: nothing to do

    assert left_behind(delta_path) == []
    assert participant.recover(txid_prefix("pay")) == []
    assert table_keys(delta_path) == record_keys(records.slice(0, 2))


def test_another_process_finds_and_commits_what_each_participant_staged(delta_path: str) -> None:
    records = payments(8)
    staged = {
        name: DeltaParticipant(delta_path, name=name).prepare(
            records.slice(4 * i, 4), Transaction.new(app_id, 0, KEYS))
        for i, (name, app_id) in enumerate([("delta", "pay"), ("mirror", "payroll")])
    }
    DeltaParticipant(delta_path).prepare(records, Transaction.new("other", 0, KEYS))

    resolvers = staged_participants(delta_path, "kse:pay")

    assert [p.name for p in resolvers] == ["delta", "mirror"]
    for resolver in resolvers:
        (token,) = resolver.recover("kse:pay")
        assert token.txid == staged[resolver.name].txid
        assert resolver.commit(token) == 0
    assert table_keys(delta_path) == record_keys(records)
    assert staged_participants(delta_path, "kse:pay") == []
    assert [p.name for p in staged_participants(delta_path, txid_prefix("other"))] == ["delta"]


def test_records_two_applications_staged_are_committed_by_the_first_only(delta_path: str) -> None:
    records = payments(9)
    committed_by_another_app(delta_path, records.slice(0, 1))
    apps = {app: DeltaParticipant(delta_path) for app in ("a", "b", "c")}
    held = {"a": records.slice(1, 5), "b": records.slice(3, 6), "c": records.slice(1, 2)}
    tokens = {app: apps[app].prepare(held[app], Transaction.new(app, 0, KEYS)) for app in apps}

    assert [apps[app].commit(tokens[app]) for app in ("a", "b", "c")] == [0, 3, 2]

    table = DeltaTable(delta_path)
    assert table_keys(delta_path) == record_keys(records)
    # A commit that left out every record still records its batch.
    assert [table.transaction_version(app) for app in ("a", "b", "c")] == [1, 1, 1]
    assert left_behind(delta_path) == []


def test_a_second_application_on_one_app_id_is_named_and_its_rows_still_land(
    delta_path: str,
) -> None:
    records = payments(6)
    first, second = DeltaParticipant(delta_path), DeltaParticipant(delta_path)
    committed_by_another_app(delta_path, records.slice(0, 1))
    one = first.prepare(records.slice(1, 2), Transaction.new("pay", 0, KEYS))
    two = second.prepare(records.slice(3, 3), Transaction.new("pay", 0, KEYS))
    first.commit(one)

    with pytest.raises(AppIdConflictError, match=r"\('pay', 1\).*two applications use app_id"):
        second.commit(two)

    assert table_keys(delta_path) == record_keys(records)
    assert DeltaTable(delta_path).transaction_version("pay") == 2


def test_a_commit_after_someone_else_rolled_the_transaction_back_is_an_error(
    delta_path: str,
) -> None:
    participant = DeltaParticipant(delta_path)
    token = participant.prepare(payments(3), Transaction.new("pay", 0, KEYS))
    DeltaParticipant(delta_path).abort(token)

    with pytest.raises(TwoPhaseCommitError, match=r"staged files of kse:pay:0:.* are gone"):
        participant.commit(token)
    assert table_keys(delta_path) == []


def test_a_batch_with_other_columns_or_a_bad_name_is_refused(delta_path: str) -> None:
    participant = DeltaParticipant(delta_path)
    participant.commit(participant.prepare(payments(2), Transaction.new("pay", 0, KEYS)))
    wider = payments(3).append_column("note", pa.array(["x"] * 3))

    with pytest.raises(TargetTableError, match=r"the batch has .*'note'"):
        participant.prepare(wider, Transaction.new("pay", 1, KEYS))
    with pytest.raises(ConfigurationError, match="name must be"):
        DeltaParticipant(delta_path, name="two words")
    assert len(table_keys(delta_path)) == 2
