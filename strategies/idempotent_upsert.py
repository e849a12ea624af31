"""The idempotent upsert sink: exactly-once effects by writing each identity at most once.

A redelivered record carries the same identity as its first delivery, so writing it with
``INSERT ... ON CONFLICT`` (SQL) or ``MERGE`` (Delta) on that identity changes nothing the
second time. The target table itself is the ledger of applied records; no other state is kept.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Unpack

import pyarrow as pa

from kafka_share_eos._extras import DELTA, ICEBERG, require_sql
from kafka_share_eos._libs import sa
from kafka_share_eos.errors import SinkConfigurationError
from kafka_share_eos.sinks import (
    ChecksRows,
    ChecksRowsInTurn,
    FollowsStreamingQuery,
    KnowsApplied,
    RowChecker,
    SqlTarget,
    UpsertOutcome,
    UpsertWriter,
)
from kafka_share_eos.sinks.outcome import OneByOne, WritesDataFrames
from kafka_share_eos.strategies.base import BatchStrategy, StrategyOptions
from kafka_share_eos.strategies.executors import write_on_executors
from kafka_share_eos.strategies.identity import RecordIdentity
from kafka_share_eos.strategies.report import BatchReport

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyspark.sql import DataFrame

WritePath = Literal["auto", "driver", "executors"]
DeltaEngine = Literal["delta-rs", "spark"]
_WRITE_PATHS = ("auto", "driver", "executors")


class IdempotentUpsertSink(BatchStrategy):
    """Upserts each micro-batch into a PostgreSQL, SQLite, Delta or Iceberg table, idempotently.

    Build one with :meth:`sql`, :meth:`delta` or :meth:`iceberg` and pass it to
    ``foreachBatch``; or call :meth:`apply` with an Arrow table. (The constructor takes any
    :class:`UpsertWriter`; it must be configured with the identity's key and version columns.)

    Rows are identified by ``(topic, partition, offset)`` unless ``key_columns`` names
    business-key columns; with a ``version_column`` the highest version of a key wins and an
    older redelivery never overwrites a newer row.

    Where Spark batches are written (``write_path``):

    - ``"driver"``: the batch is collected as Arrow (``toArrow``) and written by the driver;
    - ``"executors"`` (PostgreSQL only): repartitioned on the key columns and written by each
      executor task in its own transaction;
    - ``"auto"`` (default): executors on PostgreSQL when the batch has at least
      ``executor_threshold`` rows, else the driver. Counting a batch costs a Spark job, as much
      as a small batch's write: the first batch is counted, and later ones only while the
      previous batch had at least half the threshold (batches of one stream have similar
      sizes; a larger one than foreseen is only written by the driver). Delta is
      always written by the driver: delta-rs must not run in forked worker processes.

    With ``transform`` or ``dead_letters`` (see :class:`StrategyOptions`) batches are written
    by the driver. A row the target refuses (a constraint, a type or range violation) is found
    by checking halves of the batch in transactions that are rolled back (SQL) or by casting to
    the table's types (Delta), dead-lettered, and the rest of the batch is written.

    Raises:
        SinkConfigurationError: ``write_path`` is not one of ``"auto"``, ``"driver"``,
            ``"executors"``, or is ``"executors"`` with a target other than PostgreSQL or with
            ``transform`` or ``dead_letters``.
    """

    def __init__(
        self,
        writer: UpsertWriter,
        identity: RecordIdentity,
        *,
        write_path: WritePath = "auto",
        executor_threshold: int = 250_000,
        **options: Unpack[StrategyOptions],
    ) -> None:
        if write_path not in _WRITE_PATHS:
            raise SinkConfigurationError(
                f"write_path must be one of {list(_WRITE_PATHS)}, got {write_path!r}"
            )
        self._executors_allowed = isinstance(writer, WritesDataFrames) or (
            isinstance(writer, SqlTarget) and writer.dialect == "postgresql"
        )
        if write_path == "executors" and not self._executors_allowed:
            raise SinkConfigurationError(
                f"write_path='executors' needs a PostgreSQL target or engine='spark', not "
                f"{writer.target!r}"
            )
        super().__init__(identity, f"IdempotentUpsertSink[{writer.target}]", **options)
        if write_path == "executors" and self.screens_rows:
            raise SinkConfigurationError(
                "write_path='executors' cannot be combined with transform or dead_letters: "
                "rows are screened in the driver (use write_path='auto' or 'driver')"
            )
        self.writer = writer
        self.write_path = write_path
        self.executor_threshold = executor_threshold
        self._checked()

    @classmethod
    def sql(
        cls,
        engine: sa.Engine | str,
        table: str,
        *,
        key_columns: Sequence[str] | None = None,
        version_column: str | None = None,
        db_schema: str | None = None,
        create_table: bool = False,
        bulk_threshold: int = 100,
        write_path: WritePath = "auto",
        executor_threshold: int = 250_000,
        **options: Unpack[StrategyOptions],
    ) -> IdempotentUpsertSink:
        """A sink into a SQL table (``postgresql+psycopg://...`` or ``sqlite:///...``).

        The table needs a primary key or unique constraint on exactly the key columns, or is
        created from the first batch's schema with ``create_table=True``. On PostgreSQL, batches
        of at least ``bulk_threshold`` rows are loaded with COPY.

        Raises:
            MissingExtraError: SQLAlchemy (or psycopg for a PostgreSQL URL) is not installed.
            SinkConfigurationError: empty or repeated ``key_columns``, a ``version_column``
                among them, ``bulk_threshold`` below 1, a URL of another database than
                PostgreSQL or SQLite, or a ``write_path`` the target cannot take.
            DatabaseUnreachableError: the database could not be connected to (checked when
                the sink is built, unless ``check_on_create=False``).
            TargetTableError: the table, or the SQLite file, is missing without
                ``create_table``, or has no unique key on exactly the key columns (checked
                when the sink is built).
        """
        require_sql(engine, "IdempotentUpsertSink.sql")
        from kafka_share_eos.sinks.sql import SqlUpsertWriter

        identity = RecordIdentity.of(key_columns, version_column)
        writer = SqlUpsertWriter(
            engine,
            table,
            key_columns=identity.key_columns,
            version_column=identity.version_column,
            db_schema=db_schema,
            create_table=create_table,
            bulk_threshold=bulk_threshold,
        )
        return cls(
            writer,
            identity,
            write_path=write_path,
            executor_threshold=executor_threshold,
            **options,
        )

    @classmethod
    def delta(
        cls,
        table_uri: str | os.PathLike[str],
        *,
        key_columns: Sequence[str] | None = None,
        version_column: str | None = None,
        app_id: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        max_commit_attempts: int = 5,
        engine: DeltaEngine = "delta-rs",
        **options: Unpack[StrategyOptions],
    ) -> IdempotentUpsertSink:
        """A sink into a Delta table (created on the first batch when missing).

        ``app_id`` names the Delta application transaction recording applied batch ids. By
        default it is the streaming query's id when the sink runs in ``foreachBatch`` (stable
        across restarts from one checkpoint, new with a new one), else the table URI.

        ``engine`` writes the table with delta-rs in the driver (``"delta-rs"``, the default:
        each batch is collected as Arrow) or with one delta-spark MERGE per batch run on the
        executors (``"spark"``: no rows through the driver, unless ``transform`` or
        ``dead_letters`` screen them there first; needs the ``delta-spark`` extra and a session
        set up by :func:`~kafka_share_eos.with_delta_spark`; docs/delta-spark.md).

        Raises:
            MissingExtraError: deltalake (or, with ``engine="spark"``, delta-spark) is not
                installed.
            SinkConfigurationError: empty or repeated ``key_columns``, a ``version_column``
                among them, ``max_commit_attempts`` below 1, or an unknown ``engine``.
            TargetTableError: ``table_uri`` is a file, or a directory holding other files than
                a Delta table's (checked when the sink is built).
        """
        DELTA.require("IdempotentUpsertSink.delta")
        from kafka_share_eos.sinks.delta_upsert import DeltaMergeWriter

        identity = RecordIdentity.of(key_columns, version_column)
        if engine == "spark":
            from kafka_share_eos.deltaspark.merge import DeltaSparkMergeWriter

            writer_class: type[DeltaMergeWriter] = DeltaSparkMergeWriter
        elif engine == "delta-rs":
            writer_class = DeltaMergeWriter
        else:
            raise SinkConfigurationError(f"engine must be 'delta-rs' or 'spark', got {engine!r}")
        writer = writer_class(
            table_uri,
            key_columns=identity.key_columns,
            version_column=identity.version_column,
            app_id=app_id,
            storage_options=storage_options,
            max_commit_attempts=max_commit_attempts,
        )
        # The delta-spark writer merges on the executors by itself; delta-rs only in the driver.
        write_path: WritePath = "auto" if engine == "spark" else "driver"
        return cls(writer, identity, write_path=write_path, **options)

    @classmethod
    def iceberg(
        cls,
        table: str,
        *,
        catalog: Catalog | Mapping[str, Any],
        key_columns: Sequence[str] | None = None,
        version_column: str | None = None,
        create_table: bool = False,
        app_id: str | None = None,
        max_commit_attempts: int = 5,
        **options: Unpack[StrategyOptions],
    ) -> IdempotentUpsertSink:
        """A sink into an Iceberg table through pyiceberg, written by the driver
        (docs/iceberg.md).

        ``table`` is the identifier in ``catalog`` (``"db.events"``): a pyiceberg ``Catalog``,
        or its configuration as ``load_catalog`` takes it (``{"type": "sql", "uri":
        "sqlite:///catalog.db", "warehouse": "file:///warehouse"}``), which is what a copy of
        the strategy in another process (a Spark Connect server) builds its own catalog from.
        New keys are appended; with a ``version_column`` a higher version replaces the stored
        row (copy-on-write). Each commit's snapshot records ``app_id`` and the batch id, so a
        batch already committed is skipped; ``app_id`` defaults to the streaming query's id.

        Raises:
            MissingExtraError: pyiceberg is not installed.
            SinkConfigurationError: empty or repeated ``key_columns``, a ``version_column``
                among them, ``max_commit_attempts`` below 1, a table name without namespace,
                or a ``catalog`` that is neither a pyiceberg catalog nor a configuration.
            TargetTableError: the table is missing without ``create_table``, or has equality
                deletes or a format version above 2 (checked when the sink is built, unless
                ``check_on_create=False``, and before each batch).
            MissingColumnsError: the table lacks a key or version column (checked likewise).
        """
        ICEBERG.require("IdempotentUpsertSink.iceberg")
        from kafka_share_eos.sinks.iceberg_upsert import IcebergUpsertWriter

        identity = RecordIdentity.of(key_columns, version_column)
        writer = IcebergUpsertWriter(
            table,
            catalog=catalog,
            key_columns=identity.key_columns,
            version_column=identity.version_column,
            app_id=app_id,
            create_table=create_table,
            max_commit_attempts=max_commit_attempts,
        )
        return cls(writer, identity, write_path="driver", **options)

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Write a Spark micro-batch from the driver or the executors (see ``write_path``)."""
        query_id = self._query_id(batch_df)
        if query_id is not None and isinstance(self.writer, FollowsStreamingQuery):
            self.writer.bind_streaming_query(query_id)
        if not self._use_executors(batch_df):
            return super().apply_dataframe(batch_df, batch_id)
        started = time.perf_counter()
        if isinstance(self.writer, WritesDataFrames):
            # delta-spark's MERGE runs on the executors by itself.
            self.identity.check_columns(batch_df.columns, f"the batch given to {self.name}")
            merged = self.writer.upsert_dataframe(batch_df, batch_id)
            return self._record(batch_id, merged.rows_in, merged.duplicates_in_batch,
                                merged.outcome, started)
        self._ensure_ready(batch_df.limit(0).toArrow().schema)
        counts = write_on_executors(batch_df, self.writer, self.identity, batch_id)
        return self._record(
            batch_id, counts.rows_in, counts.duplicates_in_batch, counts.outcome, started
        )

    def close(self) -> None:
        """Release the connections the sink holds."""
        self.writer.close()

    def _use_executors(self, batch_df: DataFrame) -> bool:
        if self.write_path == "auto":
            if self.screens_rows or not self._executors_allowed:
                return False
            if isinstance(self.writer, WritesDataFrames):
                return True
            last = self.last_report
            if last is not None and last.rows_in < self.executor_threshold // 2:
                return False
            return batch_df.count() >= self.executor_threshold
        return self.write_path == "executors"

    def _targets(self) -> Sequence[object]:
        return (self.writer,)

    def _prepare(self, schema: pa.Schema) -> None:
        self.writer.prepare(schema)

    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        return self.writer.upsert(table, batch_id)

    def _applied(self, keys: pa.Table) -> list[bool] | None:
        return self.writer.applied(keys) if isinstance(self.writer, KnowsApplied) else None

    def _check_rows(self) -> RowChecker | None:
        # Checks that build on each other find a row conflicting with another row of its batch.
        if isinstance(self.writer, ChecksRowsInTurn):
            return self.writer.checks()
        if isinstance(self.writer, ChecksRows):
            return OneByOne(self.writer)
        return None
