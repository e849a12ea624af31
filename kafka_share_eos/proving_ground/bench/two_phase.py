"""Cost of two-phase commit: the 2PC coordinator against what it replaces, same run.

Every contender applies the same batches (Kafka-shaped rows with an account and an amount) to the
same Postgres server through their Arrow entry point ``apply(table, batch_id)``:

- ``upsert``: ``IdempotentUpsertSink.sql`` into a table keyed on (topic, partition, offset),
  its COPY bulk path (the baseline);
- ``2pc_set_effect``: the coordinator with one Postgres participant whose effect is a function
  adding the batch's amounts to account balances in one set-based ``UPDATE``;
- ``2pc_row_effect``: the same effect as SQL run once per record
  (``UPDATE ... SET balance = balance + :amount``), the simplest way to write an effect;
- ``2pc_postgres_delta``: the set-based effect plus a Delta participant appending the records;
- ``row_statements_at_least_once``: the per-record statements as a pipeline without the toolkit
  runs them, at least once: psycopg's ``executemany`` in one transaction per batch, with no
  ledger and no two-phase commit (the baseline of ``2pc_row_effect``).

Every 2PC variant keeps its ledger of applied keys, logs its decision to a file and runs
``PREPARE TRANSACTION`` / ``COMMIT PREPARED`` per batch. Ratios are rows/s over the upsert sink's
rows/s (and the per-record effect's also over the at-least-once statements'), best of
``repeats`` runs taken in turns. ``python benchmarks/bench_two_phase.py --help``;
``run()`` returns the numbers as a dict.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from kafka_share_eos import postgres_array
from kafka_share_eos._libs import sa
from kafka_share_eos.proving_ground.bench.common import (
    Prepare,
    best_seconds,
    postgres_database,
    script_parser,
)
from kafka_share_eos.strategies.base import BatchStrategy
from kafka_share_eos.strategies.idempotent_upsert import IdempotentUpsertSink
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant

ACCOUNTS = 1000
ROW_EFFECT = "UPDATE accounts SET balance = balance + :amount WHERE id = :account"
"""The per-record effect, with SQLAlchemy's ``:name`` parameters."""
AT_LEAST_ONCE = "row_statements_at_least_once"


def payment_batch(count: int, first_offset: int) -> pa.Table:
    """Rows shaped like the parsed output of the kafka-share source, over 8 partitions."""
    offsets = range(first_offset, first_offset + count)
    return pa.table(
        {
            "topic": pa.array(["payments"] * count),
            "partition": pa.array([o % 8 for o in offsets], pa.int32()),
            "offset": pa.array(list(offsets), pa.int64()),
            "account": pa.array([o % ACCOUNTS for o in offsets], pa.int32()),
            "amount": pa.array([o % 97 + 1 for o in offsets], pa.int64()),
        }
    )


def add_to_balances(conn: sa.Connection, rows: pa.Table) -> None:
    """The set-based effect: one UPDATE adding each account's total of the new records, whose
    columns go as array parameters (the way docs/two-phase-commit.md shows)."""
    conn.execute(
        sa.text(
            "UPDATE accounts AS a SET balance = a.balance + s.total"
            " FROM (SELECT account, sum(amount) AS total"
            "       FROM unnest(CAST(:accounts AS int[]), CAST(:amounts AS bigint[]))"
            "            AS r(account, amount) GROUP BY account) AS s"
            " WHERE a.id = s.account"
        ),
        {"accounts": postgres_array(rows["account"]), "amounts": postgres_array(rows["amount"])},
    )


def _reset(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        for table in ("upsert_target", "accounts", "kse_ledger_balances"):
            conn.execute(sa.text(f"DROP TABLE IF EXISTS {table}"))
        conn.execute(sa.text("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint)"))
        conn.execute(
            sa.text("INSERT INTO accounts SELECT g, 0 FROM generate_series(0, :n) AS g"),
            {"n": ACCOUNTS - 1},
        )


def _strategies(url: str, workdir: str) -> dict[str, Callable[[str], BatchStrategy]]:
    def coordinator(effect: Any, delta: bool) -> Callable[[str], BatchStrategy]:
        def make(attempt: str) -> BatchStrategy:
            participants: list[Any] = [PostgresParticipant(url, effect, name="balances")]
            if delta:
                participants.append(DeltaParticipant(f"{workdir}/{attempt}/delta"))
            return TwoPhaseCommitCoordinator(
                log=f"{workdir}/{attempt}/decisions", participants=participants, app_id="bench"
            )

        return make

    return {
        "upsert": lambda attempt: IdempotentUpsertSink.sql(
            url, "upsert_target", create_table=True, write_path="driver"
        ),
        "2pc_set_effect": coordinator(add_to_balances, delta=False),
        "2pc_row_effect": coordinator(ROW_EFFECT, delta=False),
        "2pc_postgres_delta": coordinator(add_to_balances, delta=True),
    }


def _statements_at_least_once(engine: sa.Engine, data: list[pa.Table]) -> Callable[[], None]:
    """The work of the at-least-once contender: :data:`ROW_EFFECT` once per record through
    psycopg's ``executemany`` (pipelined), one transaction per batch."""
    statement = re.sub(r":(\w+)", r"%(\1)s", ROW_EFFECT)
    params = [batch.select(["amount", "account"]).to_pylist() for batch in data]

    def work() -> None:
        raw = engine.raw_connection()
        try:
            connection = raw.driver_connection
            assert connection is not None
            updated = 0
            for rows in params:
                with connection.transaction(), connection.cursor() as cursor:
                    cursor.executemany(statement, rows)
                    updated += cursor.rowcount
            assert updated == sum(len(rows) for rows in params), updated
        finally:
            raw.close()

    return work


def run(
    rows_per_batch: int = 20_000, batches: int = 15, repeats: int = 3, url: str | None = None
) -> dict[str, Any]:
    """Measure every strategy on the same batches and server; rows/s and ratios to upsert."""
    data = [payment_batch(rows_per_batch, b * rows_per_batch) for b in range(batches)]
    total = rows_per_batch * batches
    with postgres_database(url) as db_url, tempfile.TemporaryDirectory() as workdir:
        engine = sa.create_engine(db_url)

        def contender(name: str, make: Callable[[str], BatchStrategy]) -> Prepare:
            def prepare(attempt: int) -> Callable[[], object]:
                _reset(engine)
                strategy = make(f"{name}-{attempt}")

                def work() -> None:
                    for batch_id, batch in enumerate(data):
                        strategy.apply(batch, batch_id)
                    assert strategy.totals.rows_written == total, (name, strategy.totals)

                return work

            return prepare

        contenders = {name: contender(name, make)
                      for name, make in _strategies(db_url, workdir).items()}

        def at_least_once(_: int) -> Callable[[], None]:
            _reset(engine)
            return _statements_at_least_once(engine, data)

        contenders[AT_LEAST_ONCE] = at_least_once
        seconds = best_seconds(contenders, repeats)
        engine.dispose()
    rates = {name: total / s for name, s in seconds.items()}
    return {
        "rows_per_batch": rows_per_batch,
        "batches": batches,
        "rows_per_second": {k: round(v) for k, v in rates.items()},
        "ratio_to_upsert": {
            k: round(v / rates["upsert"], 3) for k, v in rates.items()
            if k not in ("upsert", AT_LEAST_ONCE)
        },
        "row_effect_vs_at_least_once": round(rates["2pc_row_effect"] / rates[AT_LEAST_ONCE], 3),
    }


def main() -> None:
    parser = script_parser(__doc__, {"rows_per_batch": 20_000, "batches": 15, "repeats": 3})
    parser.add_argument("--url", help="SQLAlchemy URL of a database (default: a throwaway server)")
    args = parser.parse_args()
    print(json.dumps(run(args.rows_per_batch, args.batches, args.repeats, args.url), indent=2))


if __name__ == "__main__":
    main()
