"""Writing a large micro-batch from the Spark executors, one transaction per partition.

The batch is repartitioned on the key columns so every delivery of an identity lands in the
same partition; each partition is then deduplicated and written by a pickled copy of the writer
in its own transaction. A key is a row of the target, so partitions never wait on each other's
rows: the batch is cut into one partition per task slot, however small it is. A retried task
re-applies its rows, which idempotence absorbs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from kafka_share_eos.sinks import UpsertOutcome, UpsertWriter
from kafka_share_eos.spark_partitions import map_key_partitions
from kafka_share_eos.strategies.identity import RecordIdentity

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_COUNTS = ("rows_in", "duplicates_in_batch", "already_applied", "rows_written")
_RESULT = pa.schema([(name, pa.int64()) for name in _COUNTS])


@dataclass(frozen=True)
class PartitionCounts:
    """Counts summed over the partitions of one batch."""

    rows_in: int
    duplicates_in_batch: int
    outcome: UpsertOutcome


@dataclass(frozen=True)
class _WritePartition:
    """Deduplicates one partition and writes it in its own transaction, on an executor."""

    writer: UpsertWriter
    identity: RecordIdentity
    batch_id: int

    def __call__(self, table: pa.Table | None) -> dict[str, int]:
        counts = dict.fromkeys(_COUNTS, 0)
        if table is not None:
            unique = self.identity.unique_rows(table, self.batch_id)
            outcome = self.writer.upsert(unique, self.batch_id)
            counts.update(
                rows_in=table.num_rows,
                duplicates_in_batch=table.num_rows - unique.num_rows,
                already_applied=outcome.already_applied,
                rows_written=outcome.written,
            )
        return counts


def write_on_executors(
    batch_df: DataFrame, writer: UpsertWriter, identity: RecordIdentity, batch_id: int
) -> PartitionCounts:
    """Write ``batch_df`` partition by partition on the executors and sum what they report."""
    rows = map_key_partitions(
        batch_df, identity.key_columns, _WritePartition(writer, identity, batch_id), _RESULT,
        every_slot=True,
    )
    totals = {name: sum(int(row[name]) for row in rows) for name in _COUNTS}
    return PartitionCounts(
        rows_in=totals["rows_in"],
        duplicates_in_batch=totals["duplicates_in_batch"],
        outcome=UpsertOutcome(totals["rows_written"], totals["already_applied"], "executors"),
    )
