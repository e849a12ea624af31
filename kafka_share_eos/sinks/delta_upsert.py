"""Idempotent upserts into Delta tables through delta-rs (``deltalake``).

Each batch first reads which of its keys the table holds (:func:`stored_keys`: only the files
whose key statistics can match, only the key and version columns). Rows already applied are
dropped. Rows whose key is absent are *appended*, in a commit that delta-rs may not rebase: if any
other commit landed since the snapshot that was read, it fails and the batch starts over from a
fresh snapshot, so an identity another writer added meanwhile is never appended twice. With a
version column, rows replacing a stored row of a strictly lower version are *merged* (a MERGE of
those rows only, which delta-rs refuses to commit when a concurrent commit touched what it read).

The batch's last commit records the Delta application transaction ``(app_id, batch_id)``, and a
batch whose id is not above the recorded version for ``app_id`` is skipped without writing: a
re-run of a batch after a crash between the commit and Spark's own commit log is a no-op.
delta-rs itself accepts repeated or lower versions, hence the explicit check. A crash between a
batch's append and its MERGE leaves no application transaction: the re-run finds the appended
rows stored at the same version, so only the MERGE runs again.

delta-rs is not safe after ``fork()``: use this writer only in the Spark driver process.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from kafka_share_eos import faults
from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.conflicts import describe_winners, lost_to_others
from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.delta.location import DeltaLocation
from kafka_share_eos.delta.predicates import quote_identifier
from kafka_share_eos.delta.transactions import check_batch_order, commit_properties
from kafka_share_eos.delta.types import appendable, storable, table_schema
from kafka_share_eos.errors import (
    BatchIdReusedError,
    CommitConflictError,
    MissingColumnsError,
    SinkConfigurationError,
)
from kafka_share_eos.sinks.columns import require_columns
from kafka_share_eos.sinks.dedup import contained, split_by_stored
from kafka_share_eos.sinks.outcome import UpsertOutcome
from kafka_share_eos.sinks.target_checks import check_delta_table

DEFAULT_APP_ID_PREFIX = "kafka-share-eos/upsert"


def stored_keys(
    table: deltalake.DeltaTable,
    rows: pa.Table,
    keys: Sequence[str],
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The ``columns`` (default: the ``keys``) of the table's rows that may match ``rows``' keys
    (a superset), typed as in ``rows``.

    Integer keys prune files by their min/max statistics and rows by range before a join.
    """
    wanted = list(columns if columns is not None else keys)
    if rows.num_rows == 0:
        return rows.select(wanted).slice(0, 0)
    pruning: list[tuple[str, str, Any]] = []
    row_filter = None
    for key in keys:
        if pa.types.is_integer(rows.schema.field(key).type):
            bounds = pc.min_max(rows.column(key))
            low, high = bounds["min"].as_py(), bounds["max"].as_py()
            pruning += [(key, ">=", low), (key, "<=", high)]
            term = (pc.field(key) >= low) & (pc.field(key) <= high)
            row_filter = term if row_filter is None else row_filter & term
    dataset: ds.Dataset = table.to_pyarrow_dataset(file_pruning_predicate=pruning or None)
    existing = dataset.to_table(columns=wanted, filter=row_filter)
    return existing.cast(rows.select(wanted).schema)


def rows_absent(table: deltalake.DeltaTable, rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """The rows of ``rows`` whose ``keys`` the table does not hold (in no particular order)."""
    existing = stored_keys(table, rows, keys)
    if existing.num_rows == 0:
        return rows
    # Joined on the keys alone: Arrow's join cannot carry list, map or struct columns.
    held = contained(rows.select(list(keys)), existing)
    return rows.filter(pa.array([not h for h in held], pa.bool_()))


def delta_keys_held(location: DeltaLocation, keys: pa.Table) -> list[bool]:
    """For each row of ``keys``, whether the Delta table (absent: holds nothing) has a row with
    the same values in the columns ``keys`` names."""
    table = location.open()
    if table is None:
        return [False] * keys.num_rows
    return contained(keys, stored_keys(table, keys, keys.column_names))


class DeltaMergeWriter:
    """Idempotent writer into one Delta table; rows of a batch must be unique on the keys.

    New keys are appended, newer versions of stored keys merged (see the module docstring).

    Args:
        table_uri: where the table lives (a path or an object-store URI); created on the first
            batch when missing.
        key_columns: columns that identify a row.
        version_column: when given, a row replaces the stored one only if its version is higher.
        app_id: the Delta application id that records applied batch ids. Batch ids restart at 0
            with a new checkpoint, so each streaming query needs its own. Without one, it is
            ``"kafka-share-eos/upsert:<query id>"`` once :meth:`bind_streaming_query` is called
            (the id is stable across restarts from one checkpoint and new with a new one), and
            ``"kafka-share-eos/upsert:<table_uri>"`` before that.
        storage_options: passed to delta-rs for object stores.
        max_commit_attempts: how often a batch is attempted when concurrent writers win the
            commit race.
        retry_backoff_seconds: pause before the second attempt, doubled on each further one.
    """

    def __init__(
        self,
        table_uri: str | os.PathLike[str],
        *,
        key_columns: Sequence[str],
        version_column: str | None = None,
        app_id: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        max_commit_attempts: int = 5,
        retry_backoff_seconds: float = 0.1,
    ) -> None:
        self.location = KeptTable(os.fspath(table_uri), storage_options)
        if max_commit_attempts < 1:
            raise SinkConfigurationError(
                f"max_commit_attempts must be >= 1, got {max_commit_attempts}"
            )
        self.key_columns = tuple(key_columns)
        self.version_column = version_column
        self.app_id = app_id or f"{DEFAULT_APP_ID_PREFIX}:{self.table_uri}"
        self._app_id_given = app_id is not None
        self.max_commit_attempts = max_commit_attempts
        self.retry_backoff_seconds = retry_backoff_seconds

    @property
    def table_uri(self) -> str:
        """Where the table lives."""
        return self.location.uri

    @property
    def target(self) -> str:
        """The table as ``delta:<uri>``."""
        return f"delta:{self.table_uri}"

    def bind_streaming_query(self, query_id: str) -> None:
        """Record batch ids under the streaming query's id, unless an ``app_id`` was given."""
        if not self._app_id_given:
            self.app_id = f"{DEFAULT_APP_ID_PREFIX}:{query_id}"

    def check_target(self) -> None:
        """Check, before any record is read, that the location holds a Delta table or
        nothing yet (the first batch creates the table).

        Raises:
            TargetTableError: a file, or a directory of other files, is there.
        """
        check_delta_table(self.location)

    def prepare(self, schema: pa.Schema) -> None:
        """Check that an existing table has every column of ``schema``."""
        existing = self.location.open()
        if existing is not None:
            self._check_columns(existing, schema.names)

    def upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Write ``table`` as batch ``batch_id``; lost commit races are retried a bounded number.

        Raises:
            CommitConflictError: other writers (appends, compactions, vacuums) changed the
                table under every one of ``max_commit_attempts``; it names the commits.
            AppIdConflictError: the table holds a later batch of this ``app_id``.
        """
        if table.num_rows == 0:
            return UpsertOutcome(0, 0, "merge")
        require_columns(table, [*self.key_columns, *filter(None, [self.version_column])],
                        f"batch {batch_id} for Delta table {self.table_uri!r}")
        table = storable(table, where=f"Delta table {self.table_uri!r}")
        delay = self.retry_backoff_seconds
        for attempt in range(1, self.max_commit_attempts + 1):
            try:
                return self._apply(table, batch_id)
            except Exception as error:
                # Another writer committed, or vacuumed a file the snapshot lists: read its
                # commits before the next attempts, which decide again what to write.
                if not lost_to_others(error):
                    raise
                seen = self.location.seen_version()
                self.location.contended()
                if attempt == self.max_commit_attempts:
                    raise CommitConflictError(
                        f"batch {batch_id} could not be committed to Delta table "
                        f"{self.table_uri!r} (app id {self.app_id!r}): concurrent writers won "
                        f"{attempt} commit attempts in a row (appends, compactions or vacuums); "
                        f"{describe_winners(self.location, seen, error)}; last error: {error}"
                    ) from error
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def check(self, table: pa.Table) -> None:
        """Cast ``table`` to the target's column types, raising what a MERGE of these rows
        would (a value out of range, a type that does not convert); changes nothing."""
        existing = self.location.open()
        storable(table, None if existing is None else table_schema(existing), where=self.target)

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys``, whether the table holds its key; reads, never writes."""
        return delta_keys_held(self.location, keys.select(list(self.key_columns)))

    def close(self) -> None:
        """Drop the table handle (the next batch opens the table again)."""
        self.location.forget()

    def _open(self, schema: pa.Schema) -> deltalake.DeltaTable:
        """The table (created when missing), through a handle kept between batches.

        The handle holds this writer's own commits; it is brought up to date with other
        writers' only for a while after one of them won a commit race. A stale snapshot is
        safe: the append (and the MERGE) fail when anything was committed since, and the batch
        starts over from a refreshed one. Reading the log for every batch would cost as much
        as the lookup.
        """
        delta = self.location.snapshot()
        # Creating empty first and writing after keeps one code path.
        return delta if delta is not None else self.location.create(schema)

    def _check_columns(self, delta: deltalake.DeltaTable, columns: Sequence[str]) -> None:
        """Refuse columns the table lacks (a write would drop them).

        Raises:
            MissingColumnsError: the table lacks one of ``columns``.
        """
        names = [field.name for field in delta.schema().fields]
        missing = [name for name in columns if name not in names]
        if missing:
            raise MissingColumnsError(f"Delta table {self.table_uri!r}", missing, names)

    def _check_replay(self, delta: deltalake.DeltaTable, table: pa.Table, batch_id: int) -> None:
        """A replay of the batch recorded last finds every key of it stored; a key missing
        makes it another batch under the same id.

        Raises:
            BatchIdReusedError: a key of ``table`` is not in the table.
        """
        keys = table.select(list(self.key_columns))
        absent = rows_absent(delta, keys, self.key_columns)
        if absent.num_rows:
            raise BatchIdReusedError(
                f"Delta table {self.table_uri!r} already recorded batch {batch_id} of app_id "
                f"{self.app_id!r}, and this batch {batch_id} brings {absent.num_rows} key(s) it "
                "does not hold: a batch id names one set of records (is the app_id shared?)"
            )

    def _apply(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """One attempt at the batch on the handle's snapshot; raises ``CommitFailedError`` when a
        concurrent commit got in first."""
        delta = self._open(table.schema)
        # Checked on every batch, as prepare() checks the first: a new column would otherwise be
        # dropped on the way into the table.
        self._check_columns(delta, table.column_names)
        # Cast in Arrow: a value delta-rs could not cast would panic in Rust.
        schema = table_schema(delta)
        table = storable(table, schema, where=self.target)
        applied = check_batch_order(delta.transaction_version(self.app_id), self.app_id, batch_id,
                                    f"Delta table {self.table_uri!r}")
        if applied == batch_id:
            self._check_replay(delta, table, batch_id)
            return UpsertOutcome(0, table.num_rows, "skipped-batch")
        rows = appendable(table, schema)
        if rows is None:
            # Not writable as the table's own columns: MERGE casts what an append cannot.
            return self._merge(delta, table, batch_id)
        version = [self.version_column] if self.version_column else []
        stored = stored_keys(delta, rows, self.key_columns, [*self.key_columns, *version])
        split = split_by_stored(rows, stored, self.key_columns, self.version_column)
        if split.newer.num_rows == 0:
            if split.absent.num_rows:
                self._append(delta, split.absent, batch_id)
            written = int(split.absent.num_rows)
            return UpsertOutcome(written, table.num_rows - written, "append")
        if split.absent.num_rows:
            # The application transaction goes with the MERGE, the batch's last commit.
            self._append(delta, split.absent, None)
        merged = self._merge(delta, split.newer, batch_id)
        written = int(split.absent.num_rows) + merged.written
        return UpsertOutcome(written, table.num_rows - written, "merge")

    def _append(self, delta: deltalake.DeltaTable, rows: pa.Table, batch_id: int | None) -> None:
        """Append ``rows`` unless anything was committed since ``delta``'s snapshot."""
        faults.maybe_crash(faults.SINK_MID_WRITE)
        deltalake.write_deltalake(
            delta,
            rows,
            mode="append",
            # No rebase onto a concurrent commit: it may hold the keys found absent.
            commit_properties=commit_properties(self.app_id, batch_id, rebase=False),
        )

    def _merge(self, delta: deltalake.DeltaTable, table: pa.Table, batch_id: int) -> UpsertOutcome:
        predicate = " AND ".join(
            f"target.{quote_identifier(k)} = source.{quote_identifier(k)}" for k in self.key_columns
        )
        merger = delta.merge(
            table,
            predicate=predicate,
            source_alias="source",
            target_alias="target",
            # The batch is already in memory; unstreamed execution lets delta-rs derive key
            # ranges from it and skip target files that cannot match (3x faster measured).
            streamed_exec=False,
            commit_properties=commit_properties(self.app_id, batch_id),
        )
        if self.version_column is not None:
            merger = merger.when_matched_update_all(
                predicate=_newer(self.version_column, table.schema.field(self.version_column))
            )
        merger = merger.when_not_matched_insert_all()
        faults.maybe_crash(faults.SINK_MID_WRITE)
        metrics = merger.execute()
        written = int(metrics["num_target_rows_inserted"]) + int(metrics["num_target_rows_updated"])
        return UpsertOutcome(written, table.num_rows - written, "merge")


def _newer(column: str, field: pa.Field) -> str:
    """The MERGE predicate of :func:`~kafka_share_eos.sinks.dedup.newer_versions`: a real source
    version replaces a strictly lower target one and a null or NaN one."""
    version = quote_identifier(column)
    real = f"source.{version} IS NOT NULL"
    replaceable = f"target.{version} IS NULL OR source.{version} > target.{version}"
    if pa.types.is_floating(field.type):
        real += f" AND NOT isnan(source.{version})"
        replaceable += f" OR isnan(target.{version})"
    return f"{real} AND ({replaceable})"

