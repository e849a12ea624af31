"""The slow-effect benchmark's target table on a real PostgreSQL: its trigger does the slow work
and stamps every row, whichever statement writes it; a keyed table refuses a second row of a
record; the plain executor writer copies a partition as it comes; what the table says of a run."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from kafka_share_eos._libs import sa
from kafka_share_eos.proving_ground.bench.slow_table import (
    EFFECT_MS,
    CopyPartition,
    create_table,
    read_table,
    wait_for_rows,
)

pytestmark = pytest.mark.postgres

START = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


def _records(first: int, count: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({
        "topic": ["t"] * count,
        "partition": pa.array([0] * count, pa.int32()),
        "offset": pa.array(range(first, first + count), pa.int64()),
        "timestamp": pa.array([START] * count, pa.timestamp("us", "UTC")),
        "value": [b"v"] * count,
    })


def test_every_copied_row_pays_the_effect_and_is_stamped(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    create_table(engine, "plain", keyed=False)

    (report,) = CopyPartition(postgres_url, "plain")(iter([_records(0, 10), _records(10, 10)]))
    (empty,) = CopyPartition(postgres_url, "plain")(iter([]))

    assert report.to_pydict() == {"rows": [20]} and empty.to_pydict() == {"rows": [0]}
    with engine.connect() as conn:
        stamps = [row[0] for row in conn.execute(sa.text(
            'SELECT written_at FROM plain ORDER BY "offset"'))]
    assert len(stamps) == 20 and None not in stamps
    # pg_sleep waits at least its time, and one transaction's rows are stamped one by one.
    assert (stamps[-1] - stamps[0]).total_seconds() >= 19 * EFFECT_MS / 1000
    wait_for_rows(engine, "plain", 20, query=None, timeout_s=1)
    measured = read_table(engine, "plain", backlog=10)
    assert (measured["rows"], measured["distinct_offsets"], measured["last_offset"]) == (20, 20, 19)
    assert measured["effect_seconds"] >= 9 * EFFECT_MS / 1000
    # The records after the backlog carry their produce time: 2026 is long past.
    assert measured["latency_p50_s"] <= measured["latency_p99_s"]
    assert measured["latency_p50_s"] > (dt.datetime.now(dt.UTC) - START).total_seconds() - 60
    engine.dispose()


def test_the_upserts_table_holds_each_record_once_and_an_upsert_pays_the_effect(
    postgres_url: str,
) -> None:
    engine = sa.create_engine(postgres_url)
    create_table(engine, "keyed", keyed=True)
    CopyPartition(postgres_url, "keyed")(iter([_records(0, 5)])).__next__()

    with pytest.raises(sa.exc.IntegrityError):
        next(CopyPartition(postgres_url, "keyed")(iter([_records(4, 1)])))
    with engine.begin() as conn:
        conn.execute(sa.text(
            'INSERT INTO keyed (topic, "partition", "offset") VALUES (\'t\', 0, 5) '
            'ON CONFLICT (topic, "partition", "offset") DO NOTHING'))
        count, stamped = conn.execute(sa.text(
            "SELECT count(*), count(written_at) FROM keyed")).one()
    assert (count, stamped) == (6, 6)
    measured = read_table(engine, "keyed", backlog=6)
    assert "latency_p99_s" not in measured and measured["distinct_offsets"] == 6
    engine.dispose()
