"""One task per key partition of a micro-batch, on the Spark executors, one row back from each.

A batch too large for the driver is repartitioned on its key columns: every delivery of a key
then lands in the same partition, so a task can deduplicate its partition on its own. The
upsert strategies write their partitions this way and the two-phase commit prepares them this
way; each task is pickled to the executors, sees its partition as one Arrow table and reports
one row of counts (and, for a prepare, its transaction) to the driver.

Spark's adaptive execution merges a shuffle smaller than
``spark.sql.adaptive.coalescePartitions.minPartitionSize`` (1 MiB) into one partition, so a small
batch whose rows each cost a slow effect on the sink would be written by one task while the other
task slots idle. A caller whose partitions touch disjoint rows (an upsert: a key is a row) asks
for one partition per task slot of the session (:mod:`~kafka_share_eos.spark_slots`), which
adaptive execution keeps; a batch's size is bounded by the source (``maxRecordsPerTrigger``), so
each task holds at most its share of that.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import pyarrow as pa

from kafka_share_eos.spark_slots import session_settings, task_slots

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Row

# mapInArrow takes its result schema in Spark SQL's type names.
_SPARK_TYPES = {pa.int64(): "long", pa.string(): "string"}


class PartitionTask(Protocol):
    """What runs on each partition."""

    def __call__(self, table: pa.Table | None) -> Mapping[str, Any]:
        """The partition's report, a value for every column of the result schema (more keys
        are ignored); ``table`` is None when no batch reached the partition."""
        ...


@dataclass(frozen=True)
class _ReportingTask:
    """The function ``mapInArrow`` runs on each partition."""

    task: PartitionTask
    result: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        collected = list(batches)
        report = self.task(pa.Table.from_batches(collected) if collected else None)
        yield pa.RecordBatch.from_pydict(
            {column.name: pa.array([report[column.name]], column.type) for column in self.result}
        )


def map_key_partitions(
    batch_df: DataFrame, key_columns: Sequence[str], task: PartitionTask, result: pa.Schema,
    *, every_slot: bool = False,
) -> list[Row]:
    """Run ``task`` on every partition of ``batch_df`` repartitioned on ``key_columns``; the
    rows the tasks reported, of schema ``result`` (64-bit integers and strings).

    ``every_slot`` cuts the batch into one partition per task slot of its session, however
    small it is (Spark's choice where the session's settings do not say how many slots it has);
    otherwise Spark chooses the count by the batch's size."""
    spark_schema = ", ".join(f"{column.name} {_SPARK_TYPES[column.type]}" for column in result)
    slots = task_slots(session_settings(batch_df.sparkSession)) if every_slot else None
    keyed = (batch_df.repartition(*key_columns) if slots is None
             else batch_df.repartition(slots, *key_columns))
    return (
        keyed
        .mapInArrow(_ReportingTask(task, result), spark_schema)
        .collect()
    )
