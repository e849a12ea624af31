"""The target of the slow-effect benchmark: a PostgreSQL table whose row trigger does the slow
work, a plain executor-side writer into it, and what the table says of a run.

The trigger makes the effect the same for every writer, whatever statement inserts the row
(``COPY``, or the upsert's ``INSERT ... ON CONFLICT``): :data:`EFFECT_MS` ms of ``pg_sleep``,
then ``written_at`` stamped with ``clock_timestamp()``, the instant the row's effect was done.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import sa

if TYPE_CHECKING:
    import pyarrow as pa

EFFECT_MS = 2
"""The server-side work of every row, in milliseconds."""


def create_table(engine: sa.Engine, table: str, keyed: bool) -> None:
    """``table`` with the sources' ``topic``, ``partition``, ``offset``, ``timestamp`` and
    ``value``, plus ``written_at``, and the slow row trigger; keyed on the record's identity
    with ``keyed`` (the upsert's target), without a key otherwise (a plain append's)."""
    key = ', PRIMARY KEY (topic, "partition", "offset")' if keyed else ""
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE OR REPLACE FUNCTION bench_slow_effect() RETURNS trigger AS $$ BEGIN "
            f"PERFORM pg_sleep({EFFECT_MS / 1000}); NEW.written_at := clock_timestamp(); "
            "RETURN NEW; END $$ LANGUAGE plpgsql"))
        conn.execute(sa.text(
            f'CREATE TABLE "{table}" (topic text NOT NULL, "partition" int NOT NULL, '
            f'"offset" bigint NOT NULL, "timestamp" timestamptz, value bytea, '
            f"written_at timestamptz{key})"))
        conn.execute(sa.text(
            f'CREATE TRIGGER slow_effect BEFORE INSERT OR UPDATE ON "{table}" '
            "FOR EACH ROW EXECUTE FUNCTION bench_slow_effect()"))


@dataclass(frozen=True)
class CopyPartition:
    """At least once, as a pipeline without the toolkit writes from the executors: ``COPY``
    one Spark partition into ``table`` as it comes, in a transaction of its own. The function
    ``mapInArrow`` runs; one row back, the partition's ``rows``."""

    url: str
    table: str

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from kafka_share_eos.sinks.sql_bulk import copy_rows

        collected = list(batches)
        rows = sum(batch.num_rows for batch in collected)
        if rows:
            engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool)
            with engine.begin() as conn:
                copy_rows(conn, None, self.table, pa.Table.from_batches(collected))
            engine.dispose()
        yield pa.RecordBatch.from_pydict({"rows": pa.array([rows], pa.int64())})


def wait_for_rows(engine: sa.Engine, table: str, rows: int, query: Any, timeout_s: float) -> None:
    """Return once ``table`` holds ``rows`` distinct offsets.

    Raises:
        RuntimeError: ``query`` (a streaming query writing the table) ended first, or
            ``timeout_s`` passed.
    """
    statement = sa.text(f'SELECT count(DISTINCT "offset") FROM "{table}"')
    deadline = time.monotonic() + timeout_s
    while True:
        with engine.connect() as conn:
            held = int(conn.execute(statement).scalar_one())
        if held >= rows:
            return
        if query.awaitTermination(0.2) or time.monotonic() > deadline:
            raise RuntimeError(f"{table} holds {held} of {rows} records: "
                               f"{query.exception() or 'the query did not keep up'}")


def read_table(engine: sa.Engine, table: str, backlog: int) -> dict[str, float]:
    """What ``table`` says of a run whose first ``backlog`` offsets were a backlog: its rows,
    distinct and last offsets, the seconds from the backlog's first effect to its last
    (``effect_seconds``), the first effect's instant, and the later records' latency from
    their Kafka timestamp to their effect (``latency_p50_s``, ``latency_p99_s``, when there
    are later records)."""
    window = f'"offset" < {int(backlog)}'
    latency = 'extract(epoch FROM written_at - "timestamp")'
    with engine.connect() as conn:
        row = conn.execute(sa.text(
            f'SELECT count(*), count(DISTINCT "offset"), max("offset"), '
            f"extract(epoch FROM max(written_at) FILTER (WHERE {window}) "
            f"- min(written_at) FILTER (WHERE {window})), "
            f"extract(epoch FROM min(written_at)), "
            f"percentile_cont(0.5) WITHIN GROUP (ORDER BY {latency}) FILTER (WHERE NOT {window}), "
            f"percentile_cont(0.99) WITHIN GROUP (ORDER BY {latency}) FILTER (WHERE NOT {window}) "
            f'FROM "{table}"')).one()
    rows, distinct, last, seconds, first, p50, p99 = row
    measured = {"rows": int(rows), "distinct_offsets": int(distinct), "last_offset": int(last),
                "effect_seconds": float(seconds), "first_effect_at": float(first)}
    if p99 is not None:
        measured.update(latency_p50_s=float(p50), latency_p99_s=float(p99))
    return measured
