"""Maintenance on the pipeline's Delta tables while it writes: OPTIMIZE, VACUUM with no
retention and another team's appends, each looping in a thread, on the upsert target, the
identity ledger and the dead-letter table. Batches are the source's rows handed to the
strategies as ``foreachBatch`` hands them (Spark adds nothing to what the tables see); every
record lands once, the foreign rows stay as written, and the ledger still refuses replays."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from helpers.batches import source_rows
from helpers.delta import read_delta
from helpers.ledgers import delta_rows, records
from helpers.maintenance import Maintenance, interleaved

from kafka_share_eos.deadletter import DeltaDeadLetters
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA
from kafka_share_eos.delta.types import table_schema
from kafka_share_eos.errors import ClaimConflictError, CommitConflictError
from kafka_share_eos.ledger.claims import claim
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies import CheckpointDedupStore, DeadLetterPolicy, IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)

BATCHES = 30
NEW_PER_BATCH = 20


def compact_and_vacuum(uri: str) -> None:
    """What a maintenance job does between two batches: every file the writer's kept handle
    read is rewritten, then deleted."""
    assert int(DeltaTable(uri).optimize.compact()["numFilesRemoved"])
    assert DeltaTable(uri).vacuum(retention_hours=0, enforce_retention_duration=False,
                                  dry_run=False)


def check_ran_meanwhile(maintenance: Maintenance, uri: str,
                        record: Callable[[str, object], None]) -> None:
    """Every kind of maintenance ran, and some of it between the pipeline's commits."""
    assert maintenance.compactions and maintenance.vacuumed_files and maintenance.foreign_rows
    between = interleaved(uri)
    assert between
    for name, value in [("compactions", maintenance.compactions), ("vacuums", maintenance.vacuums),
                        ("vacuumed_files", maintenance.vacuumed_files),
                        ("foreign_appends", len(maintenance.foreign_rows)),
                        ("maintenance_lost_races", maintenance.lost_races),
                        ("maintenance_between_pipeline_commits", between)]:
        record(name, value)


# -- The upsert target


def accounts(batch: int) -> pa.Table:
    """Batch ``b``: new accounts [20b, 20b+20) at version 1, the first half of the previous
    batch's accounts at version 2 (a MERGE), and the rest of them again (a redelivery)."""
    new = range(batch * NEW_PER_BATCH, (batch + 1) * NEW_PER_BATCH)
    previous = range((batch - 1) * NEW_PER_BATCH, batch * NEW_PER_BATCH) if batch else range(0)
    rows = [(a, 1) for a in new] + [(a, 2 if a % NEW_PER_BATCH < 10 else 1) for a in previous]
    return pa.table({
        "account": pa.array([a for a, _ in rows], pa.int64()),
        "version": pa.array([v for _, v in rows], pa.int64()),
        "amount": pa.array([a * v for a, v in rows], pa.int64()),
    })


def expected_accounts(batches: int) -> dict[int, int]:
    last = batches - 1
    return {a: 2 if a % NEW_PER_BATCH < 10 and a // NEW_PER_BATCH < last else 1
            for a in range(batches * NEW_PER_BATCH)}


def foreign_accounts(n: int) -> pa.Table:
    """Another team's rows: negative accounts, version 7, never in a batch."""
    ids = [-(n * 5 + i) - 1 for i in range(5)]
    return pa.table({"account": pa.array(ids, pa.int64()), "version": pa.array([7] * 5, pa.int64()),
                     "amount": pa.array([0] * 5, pa.int64())})


def upsert_sink(uri: str, **options: int) -> IdempotentUpsertSink:
    return IdempotentUpsertSink.delta(uri, key_columns=["account"], version_column="version",
                                      app_id="pipeline", **options)


def test_a_vacuum_under_the_upsert_writers_kept_handle_loses_no_read(tmp_path: Path) -> None:
    uri = str(tmp_path / "target")
    sink = upsert_sink(uri)
    sink.apply(accounts(0), 0)
    sink.apply(accounts(1), 1)
    compact_and_vacuum(uri)
    # The writer's kept snapshot still lists the vacuumed files.
    sink.apply(accounts(2), 2)
    got = read_delta(uri, "SELECT account, version FROM t")
    assert dict(zip(got["account"].to_pylist(), got["version"].to_pylist(), strict=True)) == (
        expected_accounts(3))
    assert got.num_rows == 3 * NEW_PER_BATCH


def test_the_upsert_target_under_compaction_vacuum_and_foreign_appends(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    uri = str(tmp_path / "target")
    sink = upsert_sink(uri)
    done: list[int] = []
    with Maintenance(uri, foreign_accounts, progress=lambda: len(done)) as maintenance:
        for batch in range(BATCHES):
            sink.apply(accounts(batch), batch)
            done.append(batch)
        maintenance.finish()

    got = read_delta(uri, "SELECT account, version, amount FROM t")
    rows = list(zip(*(got[c].to_pylist() for c in ("account", "version", "amount")), strict=True))
    assert not [a for a, n in Counter(a for a, _, _ in rows).items() if n > 1]  # none twice
    ours = {a: v for a, v, _ in rows if a >= 0}
    assert ours == expected_accounts(BATCHES)  # none lost, each at its latest version
    assert all(amount == a * v for a, v, amount in rows if a >= 0)
    foreign = maintenance.foreign_table
    assert foreign is not None
    assert sorted((a, v, m) for a, v, m in rows if a < 0) == sorted(
        zip(*(foreign[c].to_pylist() for c in ("account", "version", "amount")), strict=True))
    check_ran_meanwhile(maintenance, uri, record_property)


def test_retries_spent_name_the_table_and_the_commit_that_won(tmp_path: Path) -> None:
    uri = str(tmp_path / "target")
    sink = upsert_sink(uri, max_commit_attempts=1)
    sink.apply(accounts(0), 0)
    # Another team's append lands after the snapshot the writer keeps.
    write_deltalake(uri, foreign_accounts(0), mode="append")
    winner = DeltaTable(uri).version()
    with pytest.raises(CommitConflictError, match=rf"{uri}.*version {winner} \(WRITE\)"):
        sink.apply(accounts(1), 1)


def test_a_data_file_gone_with_no_commit_since_is_named_not_retried_for_ever(
    tmp_path: Path,
) -> None:
    uri = str(tmp_path / "target")
    sink = upsert_sink(uri, max_commit_attempts=2)
    sink.apply(accounts(0), 0)
    # What a full VACUUM with a retention shorter than a commit leaves: a listed file deleted.
    for file in DeltaTable(uri).file_uris():
        Path(file.removeprefix("file://")).unlink()
    with pytest.raises(CommitConflictError, match=r"no commit since, yet a data file .* missing"):
        sink.apply(accounts(1), 1)


# -- The identity ledger of the checkpoint-dedup store


def coordinates(batch: int) -> list[tuple[str, int, int]]:
    """Batch ``b``: offsets [10b, 10b+10) of partitions 0-3, and the previous batch's offsets of
    partition 0 again (redeliveries)."""
    new = [("t", p, o) for p in range(4) for o in range(batch * 10, batch * 10 + 10)]
    return new + [("t", 0, o) for o in range((batch - 1) * 10, batch * 10)] if batch else new


def foreign_claims(ledger: str) -> Callable[[int], pa.Table]:
    """Another application's claims on its own topic, typed as the ledger stores them."""
    def claims(n: int) -> pa.Table:
        rows = records(*[("foreign", 0, n * 5 + i) for i in range(5)]).select(
            ["topic", "partition", "offset"])
        now = dt.datetime.now(dt.UTC)
        rows = (rows.append_column("_batch_id", pa.array([n] * 5, pa.int64()))
                .append_column("_applied_at", pa.array([now] * 5, pa.timestamp("us", "UTC")))
                .append_column("_app_id", pa.array(["other-team"] * 5, pa.string())))
        return rows.select(table_schema(DeltaTable(ledger)).names).cast(
            table_schema(DeltaTable(ledger)))
    return claims


def test_a_vacuum_under_the_ledgers_kept_handle_loses_no_read(tmp_path: Path) -> None:
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink), app_id="pipeline")
    for batch in range(3):
        store.apply(records(*coordinates(batch)), batch)
    compact_and_vacuum(ledger)
    # Old identities only: the claim must read the ledger, through the vacuumed snapshot.
    report = store.apply(records(*coordinates(1)), 3)
    assert (report.rows_written, report.already_applied) == (0, len(set(coordinates(1))))
    assert delta_rows(sink) == sorted(set(c for b in range(3) for c in coordinates(b)))


def test_the_ledger_under_compaction_vacuum_and_foreign_claims(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink), app_id="pipeline")
    done: list[int] = []
    with Maintenance(ledger, foreign_claims(ledger), progress=lambda: len(done)) as maintenance:
        for batch in range(BATCHES):
            store.apply(records(*coordinates(batch)), batch)
            done.append(batch)
        maintenance.finish()

    expected = sorted(set(c for b in range(BATCHES) for c in coordinates(b)))
    assert delta_rows(sink) == expected  # each record once: none lost, none twice
    claims = [c for c in delta_rows(ledger) if c[0] == "t"]
    assert claims == expected
    foreign = maintenance.foreign_table
    assert foreign is not None
    assert [c for c in delta_rows(ledger) if c[0] == "foreign"] == sorted(
        zip(*(foreign[c].to_pylist() for c in ("topic", "partition", "offset")), strict=True))
    check_ran_meanwhile(maintenance, ledger, record_property)

    # After compaction and vacuum, a new store still refuses replays: the last batch again is
    # a no-op, and old records in a new batch are all already applied.
    again = CheckpointDedupStore(ledger, DeltaAppendSink(sink), app_id="pipeline")
    last = again.apply(records(*coordinates(BATCHES - 1)), BATCHES - 1)
    old = again.apply(records(*coordinates(3)), BATCHES)
    assert last.rows_written == old.rows_written == 0
    assert old.already_applied == len(set(coordinates(3)))
    assert delta_rows(sink) == expected


def test_spent_claim_attempts_name_the_ledger_and_the_commit_that_won(tmp_path: Path) -> None:
    uri = str(tmp_path / "ledger")
    ledger = IdentityLedger(uri, app_id="pipeline")
    ledger.claim(records(*coordinates(0)), 0)
    write_deltalake(uri, foreign_claims(uri)(0), mode="append")
    winner = DeltaTable(uri).version()
    with pytest.raises(ClaimConflictError, match=rf"{uri}.*version {winner} \(WRITE\)"):
        claim(ledger, records(*coordinates(1)), 1, max_attempts=1)


# -- The dead-letter table


def orders(batch: int) -> pa.Table:
    """Batch ``b``: offsets [10b, 10b+10) of topic ``orders``; every third record is past the
    delivery limit, the fifth is not JSON; the previous batch's records come again."""
    offsets = [*range(max(batch - 1, 0) * 10, batch * 10), *range(batch * 10, batch * 10 + 10)]
    values = [b"\xff not json" if o % 10 == 5 else
              json.dumps({"order_id": o, "amount": o}).encode() for o in offsets]
    return source_rows(key=[b"k%d" % o for o in offsets], value=values, topic="orders",
                       partition=0, offset=offsets,
                       deliveryCount=[3 if o % 3 == 0 else 1 for o in offsets])


def decode(rows: pa.Table) -> pa.Table:
    decoded = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({"order_id": pa.array([d["order_id"] for d in decoded], pa.int64()),
                     "amount": pa.array([d["amount"] for d in decoded], pa.int64())})


def foreign_letters(n: int) -> pa.Table:
    """Another pipeline's letters, on its own topic."""
    now = dt.datetime.now(dt.UTC)
    return pa.table({
        "letter_id": [f"other/0/{n}"], "topic": ["other"], "partition": [0], "offset": [n],
        "delivery_count": [9], "key": [None], "value": [b"x"], "row": [None],
        "stage": ["delivery-limit"], "error_type": ["DeliveryLimitReached"], "error": ["x"],
        "strategy": ["other"], "batch_id": [n], "dead_lettered_at": [now],
    }).cast(DEAD_LETTER_SCHEMA)


def letter_sink(tmp_path: Path) -> tuple[IdempotentUpsertSink, str]:
    dead = str(tmp_path / "dead")
    sink = IdempotentUpsertSink.delta(
        str(tmp_path / "orders"), key_columns=["order_id"], transform=decode, app_id="orders",
        dead_letters=DeadLetterPolicy(DeltaDeadLetters(dead), max_delivery_count=3),
    )
    return sink, dead


def expected_letters(batches: int) -> list[str]:
    return sorted(f"orders/0/{o}" for o in range(batches * 10) if o % 3 == 0 or o % 10 == 5)


def test_a_vacuum_under_the_dead_letter_tables_kept_handle_loses_no_read(tmp_path: Path) -> None:
    sink, dead = letter_sink(tmp_path)
    for batch in range(3):
        sink.apply(orders(batch), batch)
    compact_and_vacuum(dead)
    sink.apply(orders(3), 3)
    assert sorted(read_delta(dead)["letter_id"].to_pylist()) == expected_letters(4)


def test_the_dead_letter_table_under_compaction_vacuum_and_foreign_letters(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    sink, dead = letter_sink(tmp_path)
    sink.apply(orders(0), 0)  # the table exists before the other pipeline writes to it
    done: list[int] = [0]
    with Maintenance(dead, foreign_letters, progress=lambda: len(done)) as maintenance:
        for batch in range(1, BATCHES):
            sink.apply(orders(batch), batch)
            done.append(batch)
        maintenance.finish()

    letters = read_delta(dead)
    ids = letters["letter_id"].to_pylist()
    assert sorted(i for i in ids if i.startswith("orders/")) == expected_letters(BATCHES)
    foreign = maintenance.foreign_table
    assert foreign is not None
    assert sorted(i for i in ids if i.startswith("other/")) == sorted(
        foreign["letter_id"].to_pylist())
    applied = read_delta(str(tmp_path / "orders"), "SELECT order_id FROM t")["order_id"]
    assert sorted(applied.to_pylist()) == [
        o for o in range(BATCHES * 10) if not (o % 3 == 0 or o % 10 == 5)]
    check_ran_meanwhile(maintenance, dead, record_property)
