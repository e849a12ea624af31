"""Two applications upserting one table, one held mid-write past a lock handoff: each key once.

Application A (a separate process) holds records 0-5 and is paused at ``sink.mid_write``: its
write is staged (Postgres: inserted, not committed; Delta: the snapshot read, the MERGE not
committed). Meanwhile application B, to which records 3-7 were redelivered, upserts them. When A
resumes, the target decides: Postgres made B wait for A's row locks and then conflict (SQLite,
for its one write lock); Delta refuses A's commit (B's landed since A's snapshot) and A merges
again, finding 3-5 present.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from deltalake import DeltaTable
from helpers import applications
from helpers.applications import HoldGate, finish, records

from kafka_share_eos.faults import SINK_MID_WRITE
from kafka_share_eos.strategies import BatchReport, IdempotentUpsertSink

pytestmark = pytest.mark.timeout(180)

PYSQLITE_DEFAULT_TIMEOUT_S = 5.0

APPLICATION = """
import json, sys
from helpers.applications import records
from kafka_share_eos.strategies import IdempotentUpsertSink
kind, target, app, offsets = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
sink = (IdempotentUpsertSink.delta(target, app_id=app) if kind == "delta"
        else IdempotentUpsertSink.sql(target, "events", create_table=True))
report = sink.apply(records(range(*offsets), app), 0)
print(json.dumps([report.rows_written, report.already_applied]), flush=True)
"""


def held_application(kind: str, target: str, gate: HoldGate) -> list[int]:
    """Run A until it holds mid-write, let B write meanwhile (in a thread: on Postgres it waits
    for A's row locks), release A; A's report."""
    held = applications.start(APPLICATION, kind, target, "app-a", json.dumps([0, 6]),
                              **gate.env)
    gate.wait_held(held)
    b = (IdempotentUpsertSink.delta(target, app_id="app-b") if kind == "delta"
         else IdempotentUpsertSink.sql(target, "events"))
    reports: list[BatchReport] = []
    other = threading.Thread(target=lambda: reports.append(b.apply(records(range(3, 8), "b"), 0)))
    other.start()
    if kind == "delta":
        other.join(60)  # Delta writers never wait for each other: B lands first
    elif kind == "sqlite":
        # SQLite's one write lock is A's: B waits longer than pysqlite's own 5 s would let it.
        other.join(PYSQLITE_DEFAULT_TIMEOUT_S + 1)
        assert other.is_alive() and not reports
    gate.release()
    [a] = finish(held)
    other.join(60)
    [report] = reports
    assert a[0] + report.rows_written == 8  # each key written by exactly one application
    return [*a, report.rows_written]


def test_delta_upsert_held_past_a_handoff_writes_each_key_once(
    delta_path: str, tmp_path: Path
) -> None:
    a_written, a_applied, b_written = held_application(
        "delta", delta_path, HoldGate(tmp_path / "gate", SINK_MID_WRITE)
    )
    assert (a_written, a_applied, b_written) == (3, 3, 5)
    table = pa.table(DeltaTable(delta_path).scan(columns=["offset", "value"]))
    assert sorted(zip(table["offset"].to_pylist(), table["value"].to_pylist(), strict=True)) == [
        *((o, "app-a") for o in range(3)), *((o, "b") for o in range(3, 8))
    ]


def sql_upserts_held_past_a_handoff(kind: str, target: str, tmp_path: Path) -> None:
    """A inserts first; B waits for A's commit (the row locks, or SQLite's write lock), then
    finds 3-5 taken."""
    # The table exists before A starts, so B does not wait on A's CREATE TABLE.
    IdempotentUpsertSink.sql(target, "events", create_table=True).apply(
        records(range(100, 101), "setup"), 0
    )
    a_written, a_applied, b_written = held_application(
        kind, target, HoldGate(tmp_path / "gate", SINK_MID_WRITE)
    )
    assert (a_written, a_applied, b_written) == (6, 0, 2)
    engine = sa.create_engine(target)
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "offset", value FROM events ORDER BY "offset"')).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [
        *((o, "app-a") for o in range(6)), *((o, "b") for o in range(6, 8)), (100, "setup")
    ]


@pytest.mark.postgres
def test_postgres_upsert_held_past_a_handoff_writes_each_key_once(
    postgres_url: str, tmp_path: Path
) -> None:
    sql_upserts_held_past_a_handoff("postgres", postgres_url, tmp_path)


def test_sqlite_upsert_held_past_a_handoff_writes_each_key_once(tmp_path: Path) -> None:
    sql_upserts_held_past_a_handoff("sqlite", f"sqlite:///{tmp_path / 'effects.db'}", tmp_path)
