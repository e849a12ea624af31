"""The PostgreSQL COPY path: stored identities are looked up by key range and never sent again;
absent rows are copied straight in, newer versions replace older ones, and keys that are not
range-shaped take the direct COPY / temporary table path."""

from __future__ import annotations

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import events

from kafka_share_eos.strategies import IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)


def versioned(rows: list[tuple[int, int | None, str]]) -> pa.Table:
    """(id, version, payload) rows keyed on an integer id."""
    return pa.table(
        {
            "id": pa.array([r[0] for r in rows], pa.int64()),
            "version": pa.array([r[1] for r in rows], pa.int64()),
            "payload": [r[2] for r in rows],
        }
    )


def read(engine: sa.Engine, table: str, order: str) -> list[tuple[object, ...]]:
    target = sa.Table(table, sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(target).order_by(*(target.c[c] for c in order.split(","))))
        return [tuple(row) for row in rows]


def test_redelivered_rows_are_skipped_and_absent_ones_copied(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    sink = IdempotentUpsertSink.sql(engine, "events", create_table=True, bulk_threshold=1)
    first = [(p, o) for p in range(3) for o in range(100)]
    assert sink.apply(events(first), 0).rows_written == 300

    # Every tenth record comes back (tagged differently) next to new ones of each partition.
    again = [(p, o) for p, o in first if o % 10 == 0]
    new = [(p, o) for p in range(3) for o in range(100, 150)]
    report = sink.apply(events(again + new, tag="again"), 1)
    assert (report.write_path, report.already_applied, report.rows_written) == ("copy", 30, 150)

    # A whole batch redelivered writes nothing.
    report = sink.apply(events(first + new, tag="again"), 2)
    assert (report.already_applied, report.rows_written) == (450, 0)

    rows = read(engine, "events", "partition,offset")
    assert [(p, o) for _, p, o, _ in rows] == sorted(first + new)
    # The first delivery's values stand.
    firsts = {**{(p, o): "v" for p, o in first}, **{(p, o): "again" for p, o in new}}
    assert all(value == f"{firsts[p, o]}{p}/{o}" for _, p, o, value in rows)
    sink.close()
    engine.dispose()


def test_only_strictly_newer_versions_replace_stored_rows(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    sink = IdempotentUpsertSink.sql(
        engine, "accounts", key_columns=["id"], version_column="version", create_table=True,
        bulk_threshold=1,
    )
    sink.apply(versioned([(1, 5, "a5"), (2, 5, "b5"), (3, 5, "c5"), (4, None, "d?")]), 0)
    # 1: older; 2: same version; 3: newer; 4: stored version null, which any real version
    # replaces; 5: new; 6: new with a null version.
    report = sink.apply(
        versioned([(1, 4, "a4"), (2, 5, "b5'"), (3, 6, "c6"), (4, 9, "d9"), (5, 1, "e1"),
                   (6, None, "f?")]),
        1,
    )
    assert (report.already_applied, report.rows_written) == (2, 4)
    assert read(engine, "accounts", "id") == [
        (1, 5, "a5"), (2, 5, "b5"), (3, 6, "c6"), (4, 9, "d9"), (5, 1, "e1"), (6, None, "f?"),
    ]
    sink.close()
    engine.dispose()


def test_scattered_keys_are_copied_directly_then_through_the_stage_table(
    postgres_url: str,
) -> None:
    engine = sa.create_engine(postgres_url)
    sink = IdempotentUpsertSink.sql(
        engine, "scattered", key_columns=["id"], version_column="version", create_table=True,
        bulk_threshold=1,
    )
    ids = list(range(0, 100_000, 5000))
    assert sink.apply(versioned([(i, 1, "one") for i in ids]), 0).rows_written == len(ids)
    # Not range-shaped, so not looked up: the direct COPY meets a stored key and the batch goes
    # through the stage table, where only the newer versions win.
    report = sink.apply(versioned([(i, 2 if i % 10_000 else 1, "two") for i in ids]), 1)
    assert (report.write_path, report.rows_written) == ("copy", len(ids) // 2)
    rows = read(engine, "scattered", "id")
    assert [(i, v, p) for i, v, p in rows] == [
        (i, 1, "one") if i % 10_000 == 0 else (i, 2, "two") for i in ids
    ]
    sink.close()
    engine.dispose()
