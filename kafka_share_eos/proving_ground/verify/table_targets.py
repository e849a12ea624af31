"""The verifier's targets that write tables (SQL, Delta), and how their effects are counted.

Counting reads the tables themselves:

- SQL upserts: a trigger logs every row the upsert inserts or updates, so a second write of a
  record shows even though the table keeps one row per identity;
- Delta upserts and appends: rows per record identity;
- increments (the two-phase-commit Postgres participant, the unsafe control):
  ``applied = applied + 1, total = total + amount`` on a row per record, so a second application
  shows both as a count and as a wrong sum.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from kafka_share_eos import faults
from kafka_share_eos._libs import deltalake, sa
from kafka_share_eos.proving_ground.verify.records import PlannedRecord
from kafka_share_eos.proving_ground.verify.targets import (
    Coordinates,
    Landed,
    Produced,
    RunContext,
    Target,
    screening,
)

EFFECTS_TABLE = "verify_effects"
WRITES_TABLE = "verify_writes"
COUNTS_TABLE = "verify_counts"
INCREMENT = (
    f"UPDATE {COUNTS_TABLE} SET applied = applied + 1, total = total + :amount WHERE id = :id"
)


def _sql_execute(url: str, statements: Sequence[str], rows: list[dict[str, Any]] | None = None,
                 insert: str | None = None) -> None:
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            for statement in statements:
                conn.exec_driver_sql(statement)
            if insert is not None and rows:
                conn.execute(sa.text(insert), rows)
    finally:
        engine.dispose()


def _sql_rows(url: str, query: str) -> list[tuple[Any, ...]]:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return [tuple(row) for row in conn.exec_driver_sql(query)]
    finally:
        engine.dispose()


def _create_counts(url: str, records: Sequence[PlannedRecord]) -> None:
    _sql_execute(
        url,
        [f"CREATE TABLE {COUNTS_TABLE} (id bigint PRIMARY KEY, applied integer NOT NULL, "
         "total bigint NOT NULL)"],
        [{"id": r.id} for r in records],
        f"INSERT INTO {COUNTS_TABLE} VALUES (:id, 0, 0)",
    )


def _increments(url: str, produced: Produced) -> Landed:
    """Applications per record of an increment: counted, and derived from the summed amounts."""
    by_id = {record.id: (coordinates, record) for coordinates, record in produced.items()}
    applied: Counter[Coordinates] = Counter()
    summed: Counter[Coordinates] = Counter()
    for record_id, times, total in _sql_rows(url, f"SELECT id, applied, total FROM {COUNTS_TABLE}"):
        coordinates, record = by_id[int(record_id)]
        applied[coordinates] = int(times)
        amount = record.expected_amount
        # Rounded up: a partial extra amount still shows as one application too many.
        summed[coordinates] = int(times) if amount == 0 else -(-int(total) // amount)
    return {"increment": applied, "increment sum": summed}


def _delta_rows(ctx: RunContext, name: str) -> Counter[Coordinates]:
    delta_table = ctx.delta_table(name)
    if delta_table is None:
        return Counter()
    import pyarrow as pa

    # QueryBuilder: to_pyarrow_table() in a process that read Delta can abort at exit.
    table = pa.table(
        deltalake.QueryBuilder()
        .register("t", delta_table)
        .execute('SELECT "partition", "offset", count(*) AS n FROM t GROUP BY 1, 2')
    )
    return Counter({
        (int(p), int(o)): int(n)
        for p, o, n in zip(*(table[c].to_pylist() for c in ("partition", "offset", "n")),
                           strict=True)
    })


class SqlUpsert(Target):
    """``IdempotentUpsertSink.sql`` into a table whose writes a trigger logs."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect

    def url(self, ctx: RunContext) -> str:
        """The SQL database of the run."""
        return ctx.postgres() if self.dialect == "postgresql" else ctx.sqlite()

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        columns = (
            'topic text NOT NULL, "partition" integer NOT NULL, "offset" bigint NOT NULL, '
            'id bigint, account integer, amount bigint, valid boolean, '
            'PRIMARY KEY (topic, "partition", "offset")'
        )
        log = f'INSERT INTO {WRITES_TABLE} VALUES (NEW."partition", NEW."offset")'
        statements = [
            f"CREATE TABLE {EFFECTS_TABLE} ({columns})",
            f'CREATE TABLE {WRITES_TABLE} ("partition" integer, "offset" bigint)',
        ]
        if self.dialect == "postgresql":
            statements += [
                f"CREATE FUNCTION verify_log_write() RETURNS trigger AS $$ BEGIN {log}; "
                "RETURN NULL; END $$ LANGUAGE plpgsql",
                f"CREATE TRIGGER verify_log AFTER INSERT OR UPDATE ON {EFFECTS_TABLE} "
                "FOR EACH ROW EXECUTE FUNCTION verify_log_write()",
            ]
        else:
            statements += [
                f"CREATE TRIGGER verify_log_{event} AFTER {event} ON {EFFECTS_TABLE} "
                f"BEGIN {log}; END"
                for event in ("INSERT", "UPDATE")
            ]
        _sql_execute(self.url(ctx), statements)

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.strategies import IdempotentUpsertSink

        return IdempotentUpsertSink.sql(
            self.url(ctx), EFFECTS_TABLE, write_path="driver", **screening(ctx)
        )

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        rows = _sql_rows(
            self.url(ctx),
            f'SELECT "partition", "offset", count(*) FROM {WRITES_TABLE} GROUP BY 1, 2',
        )
        return {self.dialect: Counter({(int(p), int(o)): int(n) for p, o, n in rows})}


class PostgresUpsert(SqlUpsert):
    name = "upsert-postgres"
    description = "IdempotentUpsertSink into a PostgreSQL table (INSERT ... ON CONFLICT)"
    needs_postgres = True

    def __init__(self) -> None:
        super().__init__("postgresql")


class SqliteUpsert(SqlUpsert):
    name = "upsert-sqlite"
    description = "IdempotentUpsertSink into an SQLite table (INSERT ... ON CONFLICT)"

    def __init__(self) -> None:
        super().__init__("sqlite")


class DeltaUpsert(Target):
    name = "upsert-delta"
    description = "IdempotentUpsertSink into a Delta table (MERGE)"
    delta_tables = ("effects-delta",)
    engine_options: ClassVar[Mapping[str, Any]] = {}
    """Keyword arguments choosing the engine of ``IdempotentUpsertSink.delta``."""

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.strategies import IdempotentUpsertSink

        return IdempotentUpsertSink.delta(
            ctx.path("effects-delta"), app_id=f"verify-{pipeline}", **self.engine_options,
            **screening(ctx),
        )

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        return {"delta": _delta_rows(ctx, "effects-delta")}


class DeltaSparkUpsert(DeltaUpsert):
    name = "upsert-delta-spark"
    description = "IdempotentUpsertSink into a Delta table through delta-spark (engine='spark')"
    delta_spark = True
    engine_options: ClassVar[Mapping[str, Any]] = {"engine": "spark"}


class TwoPhase(Target):
    name = "two-phase"
    description = "TwoPhaseCommitCoordinator: a Postgres increment and a Delta append"
    own_points = (
        faults.TWO_PHASE_POSTGRES_BEFORE_PREPARE,
        faults.TWO_PHASE_BETWEEN_PREPARES,
        faults.TWO_PHASE_DELTA_AFTER_STAGE,
        faults.TWO_PHASE_AFTER_PREPARE,
        faults.TWO_PHASE_AFTER_DECISION,
        faults.TWO_PHASE_BETWEEN_COMMITS,
        faults.TWO_PHASE_AFTER_COMMIT,
    )
    hold_point = faults.TWO_PHASE_AFTER_PREPARE
    needs_postgres = True
    delta_tables: ClassVar[tuple[str, ...]] = ("effects-delta",)

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        _create_counts(ctx.postgres(), records)

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.strategies import TwoPhaseCommitCoordinator
        from kafka_share_eos.twophase.postgres import PostgresParticipant

        return TwoPhaseCommitCoordinator(
            log=ctx.path(f"pipeline-{pipeline}/decisions"),
            participants=[PostgresParticipant(ctx.postgres(), INCREMENT), self.append(ctx)],
            app_id=f"verify-{pipeline}",
            **screening(ctx),
        )

    def append(self, ctx: RunContext) -> Any:
        """The participant that appends each record beside the Postgres increment."""
        from kafka_share_eos.twophase.delta import DeltaParticipant

        return DeltaParticipant(ctx.path("effects-delta"))

    def appended(self, ctx: RunContext) -> Landed:
        """How many times each record landed in :meth:`append`'s table."""
        return {"delta": _delta_rows(ctx, "effects-delta")}

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        return {**_increments(ctx.postgres(), produced), **self.appended(ctx)}


class DedupDelta(Target):
    name = "dedup-delta"
    description = "CheckpointDedupStore: Delta identity ledger + Delta append sink"
    own_points = (faults.DEDUP_BEFORE_SINK, faults.DEDUP_AFTER_SINK)
    hold_point = faults.DEDUP_BEFORE_CLAIM
    delta_tables = ("effects-delta", "ledger")

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.sinks.delta_append import DeltaAppendSink
        from kafka_share_eos.strategies import CheckpointDedupStore

        return CheckpointDedupStore(
            ctx.path("ledger"),
            DeltaAppendSink(ctx.path("effects-delta"), app_id=f"verify-sink-{pipeline}"),
            app_id=f"verify-{pipeline}",
            **screening(ctx),
        )

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        return {"delta": _delta_rows(ctx, "effects-delta")}


class UnsafeIncrement(Target):
    name = "unsafe-increment"
    description = "control: a plain SQLite increment with no deduplication (must be caught)"
    safe = False

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        _create_counts(ctx.sqlite(), records)

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.proving_ground.verify.unsafe import UnsafeIncrementSink

        return UnsafeIncrementSink(ctx.sqlite(), INCREMENT)

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        return _increments(ctx.sqlite(), produced)
