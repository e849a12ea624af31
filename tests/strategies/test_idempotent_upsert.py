"""Exactly-once effects of the upsert sink on every backend: SQLite, PostgreSQL (row and COPY
paths) and Delta, with the Kafka record identity and with business keys plus versions."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows
from helpers.delta import read_delta

from kafka_share_eos.strategies import IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)


def source_batch(records: Sequence[tuple[int, int, int]], topic: str = "orders") -> pa.Table:
    """Rows shaped like the kafka-share source: one per (partition, offset, delivery count)."""
    return source_rows(
        key=[f"k{partition}-{offset}".encode() for partition, offset, _ in records],
        value=[f"payload {partition}/{offset}".encode() for partition, offset, _ in records],
        topic=topic,
        partition=[partition for partition, _, _ in records],
        offset=[offset for _, offset, _ in records],
        timestamp=[EPOCH + timedelta(seconds=offset) for _, offset, _ in records],
        timestampType=0,
        deliveryCount=[delivery for _, _, delivery in records],
    )


def account_batch(rows: Sequence[tuple[str, int, float]]) -> pa.Table:
    """Business-key rows: (account, version, balance)."""
    return pa.table(
        {
            "account": [r[0] for r in rows],
            "version": pa.array([r[1] for r in rows], pa.int64()),
            "balance": pa.array([r[2] for r in rows], pa.float64()),
            "active": [r[2] >= 0 for r in rows],
        }
    )


@dataclass
class Backend:
    """Builds sinks on one backend and reads back what they wrote."""

    make_sink: Callable[..., IdempotentUpsertSink]
    read: Callable[[], list[dict[str, Any]]]
    # Write path of the three batches of the redelivery test: first, repeated, later.
    write_paths: tuple[str, str, str]


def _sql_backend(url: str, **options: Any) -> Backend:
    engine = sa.create_engine(url)

    def read() -> list[dict[str, Any]]:
        table = sa.Table("events", sa.MetaData(), autoload_with=engine)
        with engine.connect() as conn:
            return [dict(row._mapping) for row in conn.execute(sa.select(table))]

    def make_sink(**identity: Any) -> IdempotentUpsertSink:
        return IdempotentUpsertSink.sql(engine, "events", create_table=True, **options, **identity)

    if options.get("bulk_threshold") == 1:
        return Backend(make_sink, read, ("copy", "copy", "copy"))
    return Backend(make_sink, read, ("rows", "rows", "rows"))


def _delta_backend(path: str) -> Backend:
    def read() -> list[dict[str, Any]]:
        return read_delta(path).to_pylist()

    def make_sink(**identity: Any) -> IdempotentUpsertSink:
        return IdempotentUpsertSink.delta(path, **identity)

    return Backend(make_sink, read, ("append", "skipped-batch", "append"))


@pytest.fixture(params=["sqlite", "postgres-rows", "postgres-copy", "delta"])
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "sqlite":
        return _sql_backend(f"sqlite:///{tmp_path / 'sink.db'}")
    if request.param == "delta":
        return _delta_backend(str(tmp_path / "delta"))
    url = request.getfixturevalue("postgres_url")
    return _sql_backend(url, bulk_threshold=1 if request.param == "postgres-copy" else 10_000)


def _identities(rows: list[dict[str, Any]]) -> list[tuple[str, int, int]]:
    return sorted((r["topic"], r["partition"], r["offset"]) for r in rows)


def test_redeliveries_leave_one_row_per_record(backend: Backend) -> None:
    sink = backend.make_sink()
    first = [(0, o, 1) for o in range(10)] + [(1, o, 1) for o in range(5)]
    # Offsets 2 and 3 of partition 0 arrive twice in the same batch (e.g. a lock expired).
    batch0 = source_batch([*first, (0, 2, 2), (0, 3, 2)])

    report = sink.apply(batch0, 0)
    assert (report.rows_in, report.duplicates_in_batch) == (17, 2)
    assert (report.already_applied, report.rows_written) == (0, 15)

    # The same batch again, as after a crash before Spark recorded it as done.
    again = sink.apply(batch0, 0)
    assert (again.rows_in, again.duplicates_in_batch) == (17, 2)
    assert (again.already_applied, again.rows_written) == (15, 0)

    # A later batch redelivers partition 0 offsets 5..9 next to five new records.
    batch1 = source_batch([(0, o, 2) for o in range(5, 10)] + [(1, o, 1) for o in range(5, 10)])
    later = sink.apply(batch1, 1)
    assert (later.rows_in, later.duplicates_in_batch) == (10, 0)
    assert (later.already_applied, later.rows_written) == (5, 5)

    rows = backend.read()
    expected = sorted(
        {("orders", p, o) for p, o, _ in first} | {("orders", 1, o) for o in range(5, 10)}
    )
    assert _identities(rows) == expected
    # The first delivery's row stays: no redelivery rewrote it.
    assert all(r["deliveryCount"] == 1 for r in rows)
    assert {r["value"] for r in rows} == {f"payload {p}/{o}".encode() for _, p, o in expected}

    totals = sink.totals
    assert (totals.batches, totals.rows_in, totals.rows_written) == (3, 44, 20)
    assert (totals.duplicates_in_batch, totals.already_applied) == (4, 20)
    assert sink.last_report == later
    assert [r.batch_id for r in sink.reports] == [0, 0, 1]
    assert tuple(r.write_path for r in sink.reports) == backend.write_paths
    sink.close()


def test_newest_version_wins_and_older_redelivery_is_ignored(backend: Backend) -> None:
    sink = backend.make_sink(key_columns=["account"], version_column="version")
    batch0 = account_batch([("a", 1, 10.0), ("b", 1, 20.0), ("a", 3, 30.0), ("c", 2, -5.0)])
    report = sink.apply(batch0, 0)
    assert (report.rows_in, report.duplicates_in_batch) == (4, 1)
    assert (report.already_applied, report.rows_written) == (0, 3)

    # a: older than stored; b: newer; c: same version; d: new key.
    batch1 = account_batch([("a", 2, 99.0), ("b", 2, 21.0), ("c", 2, 77.0), ("d", 1, 1.0)])
    report = sink.apply(batch1, 1)
    assert (report.rows_in, report.duplicates_in_batch) == (4, 0)
    assert (report.already_applied, report.rows_written) == (2, 2)

    rows = sorted(backend.read(), key=lambda r: r["account"])
    assert [(r["account"], r["version"], r["balance"], r["active"]) for r in rows] == [
        ("a", 3, 30.0, True),
        ("b", 2, 21.0, True),
        ("c", 2, -5.0, False),
        ("d", 1, 1.0, True),
    ]
    sink.close()


def test_empty_batch_writes_nothing(backend: Backend) -> None:
    sink = backend.make_sink()
    sink.apply(source_batch([(0, 0, 1)]), 0)
    report = sink.apply(source_batch([]), 1)
    assert (report.rows_in, report.duplicates, report.rows_written) == (0, 0, 0)
    assert _identities(backend.read()) == [("orders", 0, 0)]
    sink.close()
