"""Two writers racing for the same identity on PostgreSQL: the loser absorbs it as applied."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows

from kafka_share_eos.strategies import BatchReport, IdempotentUpsertSink

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def batch(offsets: list[int]) -> pa.Table:
    return source_rows(topic="t", partition=0, offset=offsets,
                       value=pa.array([f"v{o}" for o in offsets], pa.string()))


def _wait_for_lock_wait(engine: sa.Engine) -> None:
    query = sa.text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with engine.connect() as conn:
            if conn.execute(query).scalar_one() > 0:
                return
        time.sleep(0.05)
    raise AssertionError("the sink never waited for the other writer's row lock")


def test_identity_committed_by_another_writer_mid_batch_is_absorbed(postgres_url: str) -> None:
    sink = IdempotentUpsertSink.sql(postgres_url, "events", create_table=True, bulk_threshold=1)
    sink.apply(batch([0]), 0)
    engine = sa.create_engine(postgres_url)
    events = sa.Table("events", sa.MetaData(), autoload_with=engine)
    other = engine.connect()
    other_tx = other.begin()
    # Another writer holds offset 1, uncommitted.
    other.execute(sa.insert(events).values(topic="t", partition=0, offset=1, value="other"))

    reports: list[BatchReport] = []
    # Offset 0 makes the direct COPY fail at once; the stage insert then waits on offset 1.
    writer = threading.Thread(target=lambda: reports.append(sink.apply(batch([0, 1, 2]), 1)))
    writer.start()
    _wait_for_lock_wait(engine)
    other_tx.commit()
    other.close()
    writer.join(60)

    assert [(r.write_path, r.already_applied, r.rows_written) for r in reports] == [("copy", 2, 1)]
    with engine.connect() as conn:
        rows = conn.execute(sa.select(events.c.offset, events.c.value).order_by(events.c.offset))
        assert [tuple(r) for r in rows] == [(0, "v0"), (1, "other"), (2, "v2")]
    sink.close()
    engine.dispose()
