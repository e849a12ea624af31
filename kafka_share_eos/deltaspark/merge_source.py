"""A batch made into the source of one delta-spark MERGE: counted, deduplicated when it must be,
bounded.

The batch is persisted (unless the caller cached it) and one Spark job over it gives, besides
filling the cache:

- its rows, and whether two of them may share a key: the number of distinct ``xxhash64`` values
  of the keys (a set of 8-byte hashes merged from every task, no shuffle of the rows). Equal keys
  hash equally, so as many hashes as rows proves every key distinct; fewer (a duplicate, or two
  keys whose hashes collide) sends the batch through the deduplication. Only keys whose equality
  is their binary value's get the check (integers, plain strings, binary, booleans, dates,
  timestamps): a float's ``-0.0`` and ``0.0`` hash apart where Spark's grouping makes them one;
- for each key column of an integer or plain string type that is never null in the batch, its
  lowest and highest value. ``t.k BETWEEN low AND high`` holds for every target row the MERGE's
  condition ``t.k <=> s.k`` matches, so adding it to the condition matches the same rows, while
  Delta skips the target files whose statistics lie outside the range instead of joining them
  (a batch of new, increasing keys reads none of the older files). A key column that may be null
  gets no range: ``<=>`` matches a null to a null, which no range holds.

A batch that may hold a key twice is deduplicated (the highest version of a key kept; nulls
last): a shuffle and a sort of its rows by key, persisted and counted in a second job. A batch of
distinct keys, which a stream of new records mostly is, skips both.

The MERGE then reads the persisted rows (Delta may copy them once more, as it does any source
that is not a Delta table, so that its two passes see the same rows).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import spark_functions, spark_sql, spark_types

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_RANK = "__kse_rank"


class MergeSource:
    """The persisted batch of distinct keys (:attr:`rows`), what it held and its key ranges;
    :attr:`deduplicated` tells whether the rows went through the deduplication's shuffle."""

    def __init__(self, rows: DataFrame, rows_in: int, distinct: int,
                 bounds: Sequence[tuple[str, Any, Any, Any]], deduplicated: bool) -> None:
        self.rows = rows
        self.rows_in = rows_in
        self.distinct = distinct
        self.deduplicated = deduplicated
        self._bounds = bounds

    def condition(self, key_columns: Sequence[str]) -> str:
        """The MERGE's condition in SQL (target ``t``, source ``s``): keys equal null-safely,
        and the target's keys within the batch's ranges (see the module)."""
        terms = [f"t.{quote_identifier(k)} <=> s.{quote_identifier(k)}" for k in key_columns]
        for column, data_type, low, high in self._bounds:
            # Literals of the column's own type: a widened column would defeat the skipping.
            target = f"t.{quote_identifier(column)}"
            terms.append(f"{target} >= {_literal(low, data_type)}")
            terms.append(f"{target} <= {_literal(high, data_type)}")
        return " AND ".join(terms)


def quote_identifier(name: str) -> str:
    """``name`` as a Spark SQL identifier: in backticks, a backtick in it doubled."""
    return "`" + name.replace("`", "``") + "`"


def _literal(value: Any, data_type: Any) -> str:
    """``value`` (an integer or a string, see :func:`_orderable`) as a SQL literal of
    ``data_type``. A string travels as its UTF-8 bytes in hex, which no quote or backslash in it
    can break out of."""
    if isinstance(value, str):
        return f"CAST(X'{value.encode().hex()}' AS STRING)"
    return f"CAST({int(value)} AS {data_type.simpleString()})"


@contextmanager
def merge_source(batch: DataFrame, key_columns: Sequence[str], version_column: str | None,
                 keys_distinct: bool = False) -> Iterator[MergeSource]:
    """``batch`` as a :class:`MergeSource`, persisted while the block runs. ``keys_distinct``:
    the caller has proved that no two rows share a key, so the batch is not checked."""
    f = spark_functions
    types = {field.name: field.dataType for field in batch.schema.fields}
    bounded = [k for k in key_columns if _orderable(types[k])]
    checked = not keys_distinct and all(hash_exact(types[k]) for k in key_columns)
    aggregates = [f.count(f.lit(1))]
    for k in bounded:
        aggregates += [f.count(k), f.min(k), f.max(k)]
    if checked:
        aggregates.append(f.size(f.collect_set(f.xxhash64(*key_columns))))
    # A batch the caller cached is already read once and kept: a second copy would only cost.
    level = batch.storageLevel
    cached = bool(level.useMemory or level.useDisk or level.useOffHeap)
    persisted = batch if cached else batch.persist()
    try:
        counted = persisted.agg(*aggregates).first()
        assert counted is not None  # an aggregate without grouping has one row
        rows_in = int(counted[0])
        bounds = [(k, types[k], counted[2 + 3 * i], counted[3 + 3 * i])
                  for i, k in enumerate(bounded) if 0 < counted[1 + 3 * i] == rows_in]
        if keys_distinct or (checked and counted[-1] == rows_in):
            yield MergeSource(persisted, rows_in, rows_in, bounds, deduplicated=False)
            return
        with _deduplicated(persisted, key_columns, version_column) as (rows, distinct):
            yield MergeSource(rows, rows_in, distinct, bounds, deduplicated=True)
    finally:
        if not cached:
            # Blocking: the next batch's jobs find the memory free, not held by this one's rows.
            persisted.unpersist(blocking=True)


@contextmanager
def _deduplicated(batch: DataFrame, key_columns: Sequence[str],
                  version_column: str | None) -> Iterator[tuple[DataFrame, int]]:
    """One row per key of ``batch`` (persisted while the block runs), and their number. The key
    ranges of the batch are those of its deduplicated rows: the same keys remain."""
    f = spark_functions
    # Without versions any row of a key will do: the keys themselves order it.
    ordered = spark_sql.Window.partitionBy(*key_columns).orderBy(
        f.col(version_column).desc_nulls_last() if version_column else f.col(key_columns[0]))
    rows = (batch.withColumn(_RANK, f.row_number().over(ordered))
            .where(f.col(_RANK) == 1).drop(_RANK).persist())
    try:
        yield rows, rows.count()
    finally:
        rows.unpersist(blocking=True)


def hash_exact(data_type: Any) -> bool:
    """Types whose values Spark groups as equal exactly when their ``xxhash64`` inputs are
    equal: integers, booleans, binary, plain strings, dates and timestamps."""
    t = spark_types
    return (isinstance(data_type, t.IntegralType | t.BooleanType | t.BinaryType | t.DateType
                       | t.TimestampType | t.TimestampNTZType)
            or data_type == t.StringType())


def _orderable(data_type: Any) -> bool:
    """Integers and strings of the default collation: types whose range a literal states
    exactly and Delta's file statistics cover."""
    return (isinstance(data_type, spark_types.IntegralType)
            or data_type == spark_types.StringType())
