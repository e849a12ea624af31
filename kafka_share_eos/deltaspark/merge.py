"""Idempotent upserts into a Delta table with delta-spark: one MERGE per batch, on the executors.

The batch never reaches the driver: it is persisted and counted in one Spark job, which also
proves its keys distinct or sends it through a deduplication on its keys (the highest version of
a key kept; :mod:`~kafka_share_eos.deltaspark.merge_source`), and merged into the table by
delta-spark, which runs the join and writes the files in Spark tasks; the join skips the
table's files whose keys lie outside the batch's key ranges. The
MERGE carries the Delta application transaction ``(app_id, batch_id)``
(``spark.databricks.delta.write.txnAppId``/``txnVersion``): Delta commits it with the files and
skips a MERGE whose version it already recorded, so a batch replayed after a crash between the
MERGE's commit and Spark's own commit log writes nothing.

Before the MERGE the driver reads the recorded version from the table's log (delta-rs reads the
log only, no rows): a batch id below it is refused as the delta-rs path refuses it (another
application, or a new checkpoint, uses the ``app_id``), and a replay of the recorded batch must
find every key of it in the table. Several applications merging into one table are kept to one
row per key by Delta's conflict detection: a MERGE that read the table while another one
committed files it should have read fails with ``ConcurrentAppendException`` and is run again
on the new snapshot, where the other application's keys now match.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._extras import DELTA_SPARK
from kafka_share_eos._libs import spark_sql
from kafka_share_eos.delta.transactions import check_batch_order, committed_version
from kafka_share_eos.deltaspark.merge_source import (
    MergeSource,
    hash_exact,
    merge_source,
    quote_identifier,
)
from kafka_share_eos.errors import BatchIdReusedError, CommitConflictError, SinkConfigurationError
from kafka_share_eos.sinks.delta_upsert import DeltaMergeWriter
from kafka_share_eos.sinks.outcome import UpsertOutcome

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

_TXN_APP_ID = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION = "spark.databricks.delta.write.txnVersion"
_CONFLICTS = (
    "ConcurrentAppendException", "ConcurrentDeleteReadException", "ConcurrentWriteException",
    "ConcurrentTransactionException", "MetadataChangedException", "ProtocolChangedException",
    "DeltaConcurrentModificationException",
)
# The application transaction is a setting of the Spark session: MERGEs through one session
# take turns with it (sessions from newSession() have settings of their own).
_LOCKS: weakref.WeakKeyDictionary[Any, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def _settings_lock(spark: Any) -> threading.Lock:
    with _LOCKS_LOCK:
        return _LOCKS.setdefault(spark, threading.Lock())


class DeltaSparkCounts:
    """What one batch's MERGE did, in the terms of a :class:`BatchReport`."""

    def __init__(self, rows_in: int, distinct: int, outcome: UpsertOutcome) -> None:
        self.rows_in = rows_in
        self.duplicates_in_batch = rows_in - distinct
        self.outcome = outcome


class DeltaSparkMergeWriter(DeltaMergeWriter):
    """A :class:`~kafka_share_eos.sinks.delta_upsert.DeltaMergeWriter` whose batches delta-spark
    merges on the executors (see the module); it takes the same arguments.

    The table's path must be one Spark's Hadoop file systems read (for the MERGE) as well as
    delta-rs (``storage_options``: the batch-id guard reads the log). Reads (``applied``,
    ``check``) go through delta-rs as on the parent.

    Raises:
        MissingExtraError: delta-spark or deltalake is not installed.
    """

    def __init__(self, table_uri: str | os.PathLike[str], **options: Any) -> None:
        DELTA_SPARK.require("IdempotentUpsertSink.delta(engine='spark')")
        super().__init__(table_uri, **options)

    def upsert_dataframe(self, batch: DataFrame, batch_id: int,
                         keys_distinct: bool = False) -> DeltaSparkCounts:
        """MERGE ``batch`` as batch ``batch_id``; conflicting commits are retried.
        ``keys_distinct``: the caller has proved that no two rows share a key.

        Raises:
            AppIdConflictError: the table holds a later batch of this ``app_id``.
            BatchIdReusedError: the table recorded this batch id, and the batch brings keys it
                does not hold.
            CommitConflictError: concurrent writers conflicted on every attempt.
        """
        with merge_source(batch, self.key_columns, self.version_column,
                          keys_distinct) as source:
            if source.distinct == 0:
                return DeltaSparkCounts(0, 0, UpsertOutcome(0, 0, "merge"))
            return DeltaSparkCounts(source.rows_in, source.distinct,
                                    self._merge_retried(source, batch_id))

    def upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Merge an Arrow ``table`` as batch ``batch_id`` through the active Spark session."""
        try:
            session = spark_sql.SparkSession.active()
        except Exception as error:  # pyspark's "no active or default session"
            raise SinkConfigurationError(
                f"{self.target} is written with delta-spark: start a Spark session first"
            ) from error
        frame = session.createDataFrame(table)
        return self.upsert_dataframe(frame, batch_id, self._keys_distinct(table, frame)).outcome

    def _keys_distinct(self, table: pa.Table, frame: DataFrame) -> bool:
        """Whether no two rows of ``table`` share a key, checked in Arrow where the rows are
        (keys of the types Spark groups by their binary value only, as Arrow does)."""
        keys = list(self.key_columns)
        if not all(hash_exact(frame.schema[k].dataType) for k in keys):
            return False
        return bool(table.group_by(keys).aggregate([]).num_rows == table.num_rows)

    def _merge_retried(self, source: MergeSource, batch_id: int) -> UpsertOutcome:
        delay = self.retry_backoff_seconds
        for attempt in range(1, self.max_commit_attempts + 1):
            try:
                return self._spark_merge(source, batch_id)
            except Exception as error:
                if type(error).__name__ not in _CONFLICTS:
                    raise
                if attempt == self.max_commit_attempts:
                    raise CommitConflictError(
                        f"batch {batch_id} could not be merged into Delta table "
                        f"{self.table_uri!r} (app id {self.app_id!r}): concurrent writers "
                        f"conflicted on {attempt} attempts in a row; last error: {error}"
                    ) from error
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def _spark_merge(self, source: MergeSource, batch_id: int) -> UpsertOutcome:
        spark = source.rows.sparkSession
        where = f"Delta table {self.table_uri!r}"
        recorded = check_batch_order(committed_version(self.location, self.app_id), self.app_id,
                                     batch_id, where)
        if recorded == batch_id:
            self._check_spark_replay(spark, source.rows, batch_id)
            return UpsertOutcome(0, source.distinct, "skipped-batch")
        if not self.location.exists():
            source.rows.limit(0).write.format("delta").mode("ignore").save(self.table_uri)
        # SQL rather than delta-spark's DeltaTable: a Spark Connect server runs it without
        # Delta's own Connect plugin, and a classic session the same way.
        # Without versions a stored key keeps its row: only new keys are inserted.
        matched = ""
        if self.version_column is not None:
            matched = f"WHEN MATCHED AND {_newer(self.version_column)} THEN UPDATE SET *"
        # The formatter of spark.sql reads braces: the path's own are doubled.
        target = quote_identifier(self.table_uri).replace("{", "{{").replace("}", "}}")
        statement = (f"MERGE INTO delta.{target} AS t USING {{source}} AS s "
                     f"ON {source.condition(self.key_columns)} {matched} "
                     "WHEN NOT MATCHED THEN INSERT *")
        faults.maybe_crash(faults.SINK_MID_WRITE)
        with _settings_lock(spark):
            spark.conf.set(_TXN_APP_ID, self.app_id)
            spark.conf.set(_TXN_VERSION, str(batch_id))
            try:
                metrics = spark.sql(statement, source=source.rows).first()
            finally:
                spark.conf.unset(_TXN_APP_ID)
                spark.conf.unset(_TXN_VERSION)
        written = _written(metrics)
        return UpsertOutcome(written, source.distinct - written, "merge")

    def _check_spark_replay(self, spark: Any, source: DataFrame, batch_id: int) -> None:
        """A replay of the recorded batch finds every one of its keys in the table."""
        keys = list(self.key_columns)
        stored = spark.read.format("delta").load(self.table_uri).select(*keys)
        if source.select(*keys).join(stored, keys, "left_anti").limit(1).count():
            raise BatchIdReusedError(
                f"Delta table {self.table_uri!r} already recorded batch {batch_id} of app_id "
                f"{self.app_id!r}, and this batch {batch_id} brings keys it does not hold: a "
                "batch id names one set of records (is the app_id shared?)"
            )


def _newer(column: str) -> str:
    """A real source version replaces a strictly lower target one, a null or a NaN."""
    v = quote_identifier(column)
    return (f"s.{v} IS NOT NULL AND NOT isnan(s.{v}) AND "
            f"(t.{v} IS NULL OR isnan(t.{v}) OR s.{v} > t.{v})")


def _written(metrics: Any) -> int:
    """Rows the MERGE inserted or updated (a MERGE Delta skipped reports none)."""
    if metrics is None:
        return 0
    found = metrics.asDict()
    return int(found.get("num_inserted_rows") or 0) + int(found.get("num_updated_rows") or 0)
