"""Preparing Postgres participants on the Spark executors, one prepared transaction per partition.

The batch is repartitioned on the key columns, so every delivery of a key lands in the same
partition; each task deduplicates its partition and prepares it as part ``p<partition>a<attempt>``
of the transaction, then returns the gid. The driver-side coordinator logs the gids that came
back as its decision and commits them. A retried task first rolls back what earlier attempts of
its partition prepared (no decision exists before every task finished); prepared work of a
failed job never comes back as a token, so the coordinator's abort of the whole transaction
(and, failing that, the next recovery pass) rolls it back.

Speculative execution must stay off (Spark's default): two live attempts of one partition would
wait on each other's ledger keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa

from kafka_share_eos._libs import pyspark, spark_sql
from kafka_share_eos.spark_partitions import map_key_partitions
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.protocol import Token, Transaction

_RESULT = pa.schema(
    [
        ("part", pa.string()), ("gid", pa.string()), ("xid", pa.string()),
        ("rows_in", pa.int64()), ("duplicates", pa.int64()), ("written", pa.int64()),
    ]
)


class Deduplication(Protocol):
    """What the executors need of a record identity (``RecordIdentity`` provides it)."""

    def unique_rows(self, table: pa.Table, batch_id: int) -> pa.Table:
        """The rows to apply: raise on a null key, then one row per key."""
        ...


@dataclass(frozen=True)
class ExecutorPrepare:
    """One participant's tokens for a batch prepared on the executors, and the batch counts."""

    tokens: tuple[Token, ...]
    rows_in: int
    duplicates_in_batch: int


@dataclass(frozen=True)
class _PreparePartition:
    """Prepares one partition as its own part of the transaction, on an executor."""

    participant: PostgresParticipant
    identity: Deduplication
    txn: Transaction

    def __call__(self, table: pa.Table | None) -> dict[str, str | int | None]:
        context = pyspark.TaskContext.get()
        assert context is not None, "_PreparePartition runs only inside a Spark task"
        partition, attempt = context.partitionId(), context.attemptNumber()
        if attempt > 0:
            self.participant.rollback_parts(self.txn.txid, f"p{partition}a")
        part, rows_in, duplicates, written = f"p{partition}a{attempt}", 0, 0, 0
        prepared: dict[str, str | None] = {"gid": None, "xid": None}
        if table is not None and table.num_rows:
            unique = self.identity.unique_rows(table, self.txn.batch_id)
            token = self.participant.prepare(unique, self.txn, part=part)
            prepared.update(token.data)
            rows_in, duplicates = table.num_rows, table.num_rows - unique.num_rows
            written = token.rows_written
        return {"part": part, **prepared, "rows_in": rows_in, "duplicates": duplicates,
                "written": written}


def prepare_on_executors(
    batch_df: spark_sql.DataFrame, participant: PostgresParticipant, identity: Deduplication,
    txn: Transaction,
) -> ExecutorPrepare:
    """Prepare ``participant``'s part of ``txn`` partition by partition on the executors."""
    participant.create_ledger(batch_df.limit(0).toArrow().schema, txn.key_columns)
    results = map_key_partitions(
        batch_df, txn.key_columns, _PreparePartition(participant, identity, txn), _RESULT
    )
    tokens = tuple(
        Token(participant.name, txn.txid, int(row["written"]),
              {"gid": row["gid"], "xid": row["xid"]}, row["part"])
        for row in results
        if row["gid"] is not None
    )
    return ExecutorPrepare(
        tokens,
        rows_in=sum(int(row["rows_in"]) for row in results),
        duplicates_in_batch=sum(int(row["duplicates"]) for row in results),
    )
