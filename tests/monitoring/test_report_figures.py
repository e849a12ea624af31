"""A strategy's figures as the exporter reads them: rows in, written, replays absorbed and dead
letters summed over the reports added since the last read, a checkpoint-dedup ledger's size and
a two-phase coordinator's decisions in doubt. Real targets: SQLite, Delta tables on disk."""

from __future__ import annotations

import json
import pickle
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.batches import source_rows

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.monitoring.report_figures import ReportFigures
from kafka_share_eos.sinks import DeltaAppendSink
from kafka_share_eos.strategies import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    IdempotentUpsertSink,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.strategies.session_reports import (
    KEY_PREFIX,
    SessionReports,
    SessionReportsValue,
)
from kafka_share_eos.twophase import FileDecisionLog, Transaction
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.protocol import Decision


def orders(values: list[bytes], first_offset: int = 0) -> pa.Table:
    n = len(values)
    return source_rows(key=[b"k"] * n, value=values, topic="orders", partition=0,
                       offset=range(first_offset, first_offset + n), deliveryCount=1)


def decode(rows: pa.Table) -> pa.Table:
    decoded = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({"topic": rows["topic"], "partition": rows["partition"],
                     "offset": rows["offset"],
                     "amount": pa.array([int(d["amount"]) for d in decoded], pa.int64())})


def test_reports_are_counted_once_each_and_a_replay_is_absorbed(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    dead = SqlDeadLetters(url, "orders_dead")
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=decode,
                                    dead_letters=DeadLetterPolicy(dead))
    figures = ReportFigures(sink)
    figures.refresh()
    assert figures.totals.batches == 0

    batch = orders([b'{"amount": 1}', b"{broken", b'{"amount": 3}'])
    sink.apply(batch, 0)
    figures.refresh()
    figures.refresh()
    totals = figures.totals
    assert (totals.batches, totals.rows_in, totals.rows_written, totals.dead_letters) == (
        1, 3, 2, 1)
    # Spark runs a batch again after a restart: the same rows are absorbed, not written.
    sink.apply(batch, 0)
    sink.apply(orders([b'{"amount": 4}'], first_offset=3), 1)
    figures.refresh()
    assert (totals.batches, totals.rows_in, totals.rows_written) == (3, 7, 3)
    assert totals.replays_absorbed == 2
    assert totals.dead_letters == 2
    assert totals.seconds.observations == 3
    assert totals.ledger_rows is None and totals.decisions_in_doubt is None
    sink.close()
    dead.close()


@pytest.mark.connect
def test_in_connect_the_reports_of_the_servers_copy_are_read_from_the_session(
    connect_spark: Any, tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    dead = SqlDeadLetters(url, "orders_dead")
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=decode,
                                    dead_letters=DeadLetterPolicy(dead))
    figures = ReportFigures(sink)
    figures.read_from(connect_spark)
    figures.refresh()
    assert figures.totals.batches == 0
    # What the server's foreachBatch worker does: its copy applies, its writer hands over.
    copy = pickle.loads(pickle.dumps(sink))
    writer = SessionReports(connect_spark, sink.report_key)
    batch = orders([b'{"amount": 1}', b"{broken", b'{"amount": 3}'])
    writer.add(copy.name, copy.apply(batch, 0))
    figures.refresh()
    writer.add(copy.name, copy.apply(batch, 0))
    writer.add(copy.name, copy.apply(orders([b'{"amount": 4}'], first_offset=3), 1))
    figures.refresh()
    figures.refresh()

    totals = figures.totals
    assert sink.totals.batches == 0
    assert (totals.batches, totals.rows_in, totals.rows_written, totals.dead_letters) == (
        3, 7, 3, 2)
    assert totals.replays_absorbed == 2
    assert totals.seconds.observations == 3
    # A server started again begins the session's totals anew: what was counted stays.
    connect_spark.conf.set(KEY_PREFIX + sink.report_key,
                           SessionReportsValue().plus(copy.last_report).to_json())
    figures.refresh()
    assert (totals.batches, totals.rows_in, totals.seconds.observations) == (4, 8, 4)
    sink.close()
    dead.close()


def test_a_dedup_ledger_is_measured_after_each_batch(tmp_path: Path) -> None:
    store = CheckpointDedupStore(str(tmp_path / "ledger"),
                                 DeltaAppendSink(str(tmp_path / "orders")))
    figures = ReportFigures(store)
    figures.refresh()
    assert figures.totals.ledger_rows is None
    store.apply(orders([b"a", b"b", b"c"]), 0)
    figures.refresh()
    assert figures.totals.ledger_rows == 3
    store.apply(orders([b"d"], first_offset=3), 1)
    figures.refresh()
    assert figures.totals.ledger_rows == 4


def test_a_decision_left_by_a_run_that_died_is_in_doubt(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path / "decisions"))
    coordinator = TwoPhaseCommitCoordinator(log, [DeltaParticipant(str(tmp_path / "orders"))],
                                            app_id="orders-app")
    figures = ReportFigures(coordinator)
    coordinator.apply(orders([b"a", b"b"]), 0)
    figures.refresh()
    assert figures.totals.decisions_in_doubt == 0
    log.write(Decision.abort(Transaction.new("orders-app", 1, ["offset"]).txid))
    figures.refresh()
    assert figures.totals.decisions_in_doubt == 1
