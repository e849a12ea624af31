"""A batch made into the source of one delta-spark MERGE: deduplicated once, counted, bounded.

The batch is deduplicated on its keys (the highest version of a key kept; nulls last) and
persisted, and one Spark job over the deduplicated rows gives, besides filling the cache:

- the batch's rows and distinct keys, for the sink's report (each kept row carries how many rows
  of its key the batch held, so the batch is read once, not counted apart);
- for each key column of an integer or plain string type that is never null in the batch, its
  lowest and highest value. ``t.k BETWEEN low AND high`` holds for every target row the MERGE's
  condition ``t.k <=> s.k`` matches, so adding it to the condition matches the same rows, while
  Delta skips the target files whose statistics lie outside the range instead of joining them
  (a batch of new, increasing keys reads none of the older files). A key column that may be null
  gets no range: ``<=>`` matches a null to a null, which no range holds.

The MERGE then reads the persisted rows (Delta may copy them once more, as it does any source
that is not a Delta table, so that its two passes see the same rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import spark_functions, spark_sql, spark_types

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

_RANK = "__kse_rank"
_COPIES = "__kse_copies"


class MergeSource:
    """The deduplicated, persisted batch (:attr:`rows`), what it held and its key ranges."""

    def __init__(self, deduplicated: DataFrame, rows_in: int, distinct: int,
                 bounds: Sequence[tuple[str, Any, Any, Any]]) -> None:
        self.rows = deduplicated
        self.rows_in = rows_in
        self.distinct = distinct
        self._bounds = bounds

    def condition(self, key_columns: Sequence[str]) -> Column:
        """The MERGE's condition (target ``t``, source ``s``): keys equal null-safely, and the
        target's keys within the batch's ranges (see the module)."""
        f = spark_functions
        on = f.expr(" AND ".join(f"t.`{k}` <=> s.`{k}`" for k in key_columns))
        for column, data_type, low, high in self._bounds:
            # Literals of the column's own type: a widened column would defeat the skipping.
            target = f.col(f"t.`{column}`")
            on = (on & (target >= f.lit(low).cast(data_type))
                  & (target <= f.lit(high).cast(data_type)))
        return on


@contextmanager
def merge_source(batch: DataFrame, key_columns: Sequence[str],
                 version_column: str | None) -> Iterator[MergeSource]:
    """``batch`` as a :class:`MergeSource`, persisted while the block runs."""
    f = spark_functions
    by_key = spark_sql.Window.partitionBy(*key_columns)
    # Without versions any row of a key will do: the keys themselves order it.
    ordered = by_key.orderBy(f.col(version_column).desc_nulls_last() if version_column
                             else f.col(key_columns[0]))
    deduplicated = (
        batch.withColumn(_COPIES, f.count(f.lit(1)).over(by_key))
        .withColumn(_RANK, f.row_number().over(ordered))
        .where(f.col(_RANK) == 1).drop(_RANK)
        .persist()
    )
    try:
        types = {field.name: field.dataType for field in batch.schema.fields}
        bounded = [k for k in key_columns if _orderable(types[k])]
        aggregates = [f.sum(_COPIES), f.count(f.lit(1))]
        for k in bounded:
            aggregates += [f.count(k), f.min(k), f.max(k)]
        counted = deduplicated.agg(*aggregates).first()
        assert counted is not None  # an aggregate without grouping has one row
        distinct = int(counted[1])
        bounds = [(k, types[k], counted[3 + 3 * i], counted[4 + 3 * i])
                  for i, k in enumerate(bounded) if 0 < counted[2 + 3 * i] == distinct]
        yield MergeSource(deduplicated.drop(_COPIES), int(counted[0] or 0), distinct, bounds)
    finally:
        # Blocking: the next batch's jobs find the memory free, not held by this one's rows.
        deduplicated.unpersist(blocking=True)


def _orderable(data_type: Any) -> bool:
    """Integers and strings of the default collation: types whose range a literal states
    exactly and Delta's file statistics cover."""
    return (isinstance(data_type, spark_types.IntegralType)
            or data_type == spark_types.StringType())
