"""The pipelines of the end-to-end benchmark: one per strategy, exactly once and at least once.

Each pipeline is the ``foreachBatch`` function of a ``kafka-share`` query. The exactly-once one
is the strategy itself; the at-least-once one writes the same batches into a target of the same
shape the plain way a pipeline without the toolkit would (the same ``COPY`` without a key,
a Delta or Iceberg append through a kept table handle, the same effect in a plain
transaction):

- ``upsert, Postgres``: :class:`IdempotentUpsertSink` into a table keyed on the record
  identity, against ``COPY`` into a table without a key;
- ``upsert, Delta``: :class:`IdempotentUpsertSink` into a Delta table, against an append;
- ``upsert, Iceberg``: :class:`IdempotentUpsertSink` into an Iceberg table (pyiceberg's SQL
  catalog on SQLite), against a pyiceberg append through a kept table handle;
- ``dedup``: :class:`CheckpointDedupStore` with a :class:`DeltaAppendSink`, against an append;
- ``two-phase``: :class:`TwoPhaseCommitCoordinator` with a Postgres participant adding each
  record to an account balance (one set-based ``UPDATE``), against the same ``UPDATE`` alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos._libs import deltalake, sa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ForeachBatch = Callable[["DataFrame", int], object]
ACCOUNTS = 1000


@dataclass(frozen=True)
class Contest:
    """A strategy's two pipelines; each factory takes a tag naming fresh targets."""

    name: str
    exactly_once: Callable[[str], ForeachBatch]
    at_least_once: Callable[[str], ForeachBatch]


def payments(rows: pa.Table) -> pa.Table:
    """``account`` and ``amount`` columns for source rows: each record pays 1 into an account
    chosen by its offset."""
    offsets = rows["offset"]
    accounts = pc.subtract(offsets, pc.multiply(pc.divide(offsets, ACCOUNTS), ACCOUNTS))
    return pa.table({
        "account": pc.cast(accounts, pa.int32()),
        "amount": pa.repeat(pa.scalar(1, pa.int64()), rows.num_rows),
    })


def _create_accounts(url: str, table: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f'CREATE TABLE "{table}" (id int PRIMARY KEY, balance bigint)'))
        conn.execute(
            sa.text(f'INSERT INTO "{table}" SELECT g, 0 FROM generate_series(0, :n) AS g'),
            {"n": ACCOUNTS - 1},
        )
    engine.dispose()


def _add_payments(table: str) -> Callable[[Any, pa.Table], None]:
    """The effect: one ``UPDATE`` adding each account's payments of ``rows``."""
    statement = sa.text(
        f'UPDATE "{table}" AS a SET balance = a.balance + s.total'
        " FROM (SELECT account, sum(amount) AS total"
        "       FROM unnest(CAST(:accounts AS int[]), CAST(:amounts AS bigint[]))"
        "            AS r(account, amount) GROUP BY account) AS s"
        " WHERE a.id = s.account"
    )

    def effect(conn: Any, rows: pa.Table) -> None:
        from kafka_share_eos import postgres_array

        paid = payments(rows)
        accounts, amounts = postgres_array(paid["account"]), postgres_array(paid["amount"])
        conn.execute(statement, {"accounts": accounts, "amounts": amounts})

    return effect


class _CopyAppend:
    """At least once into Postgres: ``COPY`` each batch into a table without a key."""

    def __init__(self, url: str, table: str) -> None:
        self._engine = sa.create_engine(url)
        self._table = table
        self._created = False

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        from kafka_share_eos.sinks.sql_bulk import copy_rows
        from kafka_share_eos.sinks.sql_schema import table_from_schema

        rows = batch_df.toArrow()
        if not self._created:
            table_from_schema(self._table, rows.schema, (), None).create(self._engine)
            self._created = True
        with self._engine.begin() as conn:
            copy_rows(conn, None, self._table, rows)


class _DeltaAppend:
    """At least once into Delta: append each batch through a table handle kept between them."""

    def __init__(self, uri: str) -> None:
        self._uri = uri
        self._table: Any = None

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        rows = batch_df.toArrow()
        deltalake.write_deltalake(self._table if self._table is not None else self._uri, rows,
                        mode="append")
        if self._table is None:
            self._table = deltalake.DeltaTable(self._uri)


class _IcebergAppend:
    """At least once into Iceberg: append each batch through a table handle kept between them
    (each commit refreshes it), the table created from the first batch's schema."""

    def __init__(self, catalog: dict[str, str], identifier: str) -> None:
        self._catalog = catalog
        self._identifier = identifier
        self._table: Any = None

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        rows = batch_df.toArrow()
        if self._table is None:
            from pyiceberg.catalog import load_catalog

            catalog = load_catalog(**self._catalog)
            catalog.create_namespace_if_not_exists(self._identifier.rpartition(".")[0])
            self._table = catalog.create_table(self._identifier, schema=rows.schema)
        self._table.append(rows)


def iceberg_catalog(work: Path) -> dict[str, str]:
    """pyiceberg's SQL catalog on SQLite, its database and warehouse under ``work``."""
    (work / "iceberg").mkdir(parents=True, exist_ok=True)
    return {"name": "bench", "type": "sql", "uri": f"sqlite:///{work}/iceberg-catalog.db",
            "warehouse": (work / "iceberg").as_uri()}


class _PlainEffect:
    """At least once into Postgres: the two-phase pipeline's effect in a plain transaction."""

    def __init__(self, url: str, table: str) -> None:
        _create_accounts(url, table)
        self._engine = sa.create_engine(url)
        self._effect = _add_payments(table)

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        rows = batch_df.toArrow()
        with self._engine.begin() as conn:
            self._effect(conn, rows)


def contests(postgres_url: str, work: Path, with_iceberg: bool = False) -> list[Contest]:
    """The strategies' pipelines, writing under ``work`` and into ``postgres_url``; the
    Iceberg upsert's last, with ``with_iceberg``."""
    from kafka_share_eos import (
        CheckpointDedupStore,
        DeltaAppendSink,
        IdempotentUpsertSink,
        PostgresParticipant,
        TwoPhaseCommitCoordinator,
    )

    def two_phase(tag: str) -> ForeachBatch:
        _create_accounts(postgres_url, f"accounts_{tag}")
        participant = PostgresParticipant(
            postgres_url, _add_payments(f"accounts_{tag}"), name=f"balances_{tag}"
        )
        coordinator: ForeachBatch = TwoPhaseCommitCoordinator(
            log=str(work / f"decisions-{tag}"), participants=[participant], app_id=f"bench-{tag}"
        )
        return coordinator

    every = [
        Contest(
            "upsert, Postgres",
            lambda tag: IdempotentUpsertSink.sql(postgres_url, f"upsert_{tag}", create_table=True),
            lambda tag: _CopyAppend(postgres_url, f"append_{tag}"),
        ),
        Contest(
            "upsert, Delta",
            lambda tag: IdempotentUpsertSink.delta(str(work / f"upsert-{tag}")),
            lambda tag: _DeltaAppend(str(work / f"append-{tag}")),
        ),
        Contest(
            "dedup",
            lambda tag: CheckpointDedupStore(
                str(work / f"ledger-{tag}"), DeltaAppendSink(str(work / f"sink-{tag}"))
            ),
            lambda tag: _DeltaAppend(str(work / f"plain-{tag}")),
        ),
        Contest("two-phase", two_phase, lambda tag: _PlainEffect(postgres_url, f"plain_{tag}")),
    ]
    if with_iceberg:
        iceberg = iceberg_catalog(work)
        every.append(Contest(
            "upsert, Iceberg",
            lambda tag: IdempotentUpsertSink.iceberg(
                f"bench.upsert_{tag.replace('-', '_')}", catalog=iceberg, create_table=True),
            lambda tag: _IcebergAppend(iceberg, f"bench.append_{tag.replace('-', '_')}"),
        ))
    return every
