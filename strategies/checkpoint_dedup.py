"""Exactly-once effects for sinks that can neither upsert nor prepare: an identity ledger, a
Delta table or an Iceberg one.

Per micro-batch: drop identities repeated inside the batch, *claim* in the ledger the identities
no batch claimed yet (one commit that loses to any concurrent claim of the same identities, so
applications sharing the ledger never both own a record), then hand the rows
this batch owns to the user's sink. A replayed batch finds its own claims and hands them to the
sink again. docs/checkpoint-dedup.md argues each crash point and states what the sink must
promise (atomic, and a no-op when called again with a batch id it already applied);
:class:`~kafka_share_eos.sinks.delta_append.DeltaAppendSink` keeps that promise.

delta-rs is not safe after ``fork()``: the store runs in the Spark driver (``foreachBatch``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import pyarrow as pa

from kafka_share_eos._extras import DELTA
from kafka_share_eos.errors import SinkConfigurationError
from kafka_share_eos.faults import DEDUP_AFTER_SINK as CRASH_AFTER_SINK
from kafka_share_eos.faults import DEDUP_BEFORE_SINK as CRASH_BEFORE_SINK
from kafka_share_eos.faults import maybe_crash
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.retention import RetentionPolicy
from kafka_share_eos.ledger.rows import DEFAULT_APP_ID
from kafka_share_eos.sinks import (
    ChecksRows,
    FollowsStreamingQuery,
    RowChecker,
    UpsertOutcome,
    contained,
)
from kafka_share_eos.sinks.outcome import OneByOne
from kafka_share_eos.strategies.base import BatchStrategy, StrategyOptions
from kafka_share_eos.strategies.identity import RecordIdentity
from kafka_share_eos.strategies.report import BatchReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

logger = logging.getLogger("kafka_share_eos.strategies")

Sink = Callable[[pa.Table, int], Any]
"""A user sink: ``sink(new_rows, batch_id)``, atomic and idempotent per batch id; it may return
False when it skipped a batch id it had already applied."""

QUERY_APP_ID_PREFIX = "kafka-share-eos/dedup"


class CheckpointDedupStore(BatchStrategy):
    """A ``foreachBatch`` strategy that applies each record identity to ``sink`` exactly once.

    Args:
        ledger: the identity ledger: a Delta table's URI (local path or object-store URI), or
            an :class:`~kafka_share_eos.ledger.iceberg_ledger.IcebergLedger` (an Iceberg table
            in a pyiceberg catalog). Several queries and applications may share one ledger
            (and one sink behind it).
        sink: ``sink(table, batch_id)`` receiving only rows never applied before. It must apply
            a batch atomically and do nothing when called again with a batch id it already
            applied (:class:`~kafka_share_eos.sinks.delta_append.DeltaAppendSink` does); a sink
            with a ``bind_streaming_query(query_id)`` method is told the query's id.
        key_columns: identity columns; ``(topic, partition, offset)`` when None. Business keys
            make the first applied row of each key win.
        app_id: names this application's claims in the ledger. By default the streaming
            query's id when run by ``foreachBatch`` (stable across restarts from one checkpoint,
            new with a new one), else ``"kafka-share-eos.dedup-ledger"``. Give an explicit one
            only if it is unique per application and per checkpoint: batch ids restart at 0
            with a new checkpoint.
        storage_options: delta-rs storage options for a Delta ledger.
        retention: which identities pruning may drop.
        prune_every: prune automatically after every this many batches (None: never).
        compact_every: compact and vacuum the ledger after every this many batches (None: never).
        vacuum_retention: how long files replaced by compaction stay on storage.
        options: see :class:`StrategyOptions` (``transform``, ``dead_letters``, ...). Rows the
            user's sink refuses fail the batch: a sink applied at most once per batch id cannot
            be probed row by row.

    Raises:
        MissingExtraError: deltalake is not installed (a Delta ledger).
        SinkConfigurationError: ``sink`` is not callable, ``key_columns`` is empty or repeats a
            column, ``prune_every`` or ``compact_every`` is below 1, or ``storage_options``
            come with an Iceberg ledger (its catalog's properties hold them).
        TargetTableError: the ledger's location, or a target of ``sink`` that checks itself
            (``check_target()``), cannot be written (checked when the store is built, unless
            ``check_on_create=False``).
        AppIdConflictError: (from :meth:`apply`) the ledger holds a later batch of this
            ``app_id``: another application or an earlier checkpoint uses it.
    """

    def __init__(
        self,
        ledger: str | IcebergLedger,
        sink: Sink,
        *,
        key_columns: Sequence[str] | None = None,
        app_id: str | None = None,
        storage_options: Mapping[str, str] | None = None,
        retention: RetentionPolicy | None = None,
        prune_every: int | None = None,
        compact_every: int | None = None,
        vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION,
        **options: Unpack[StrategyOptions],
    ) -> None:
        if isinstance(ledger, str):
            DELTA.require("CheckpointDedupStore")
        elif storage_options is not None:
            raise SinkConfigurationError(
                "storage_options are for a Delta ledger; an Iceberg ledger's storage is "
                "configured by its catalog's properties")
        identity = RecordIdentity.of(key_columns)
        super().__init__(identity, "CheckpointDedupStore", **options)
        for name, every in (("prune_every", prune_every), ("compact_every", compact_every)):
            if every is not None and every < 1:
                raise SinkConfigurationError(f"{name} must be >= 1 or None, got {every}")
        if not callable(sink):
            raise SinkConfigurationError(f"sink must be callable(table, batch_id), got {sink!r}")
        self.ledger: IdentityLedger | IcebergLedger = (
            IdentityLedger(ledger, identity=identity.key_columns, app_id=app_id or DEFAULT_APP_ID,
                           storage_options=storage_options)
            if isinstance(ledger, str)
            else ledger.configured(identity.key_columns, app_id or DEFAULT_APP_ID)
        )
        self._app_id_given = app_id is not None
        self.sink = sink
        self.retention = (
            retention
            if retention is not None
            else RetentionPolicy(
                offset_window=RetentionPolicy.offset_window
                if self.ledger.is_record_identity
                else None
            )
        )
        self.prune_every = prune_every
        self.compact_every = compact_every
        self.vacuum_retention = vacuum_retention
        self._checked()

    def _targets(self) -> Sequence[object]:
        return (self.ledger, self.sink)

    def _prepare(self, schema: pa.Schema) -> None:
        existing = self.ledger.stored_identity()
        if existing is not None and existing != self.ledger.identity:
            raise SinkConfigurationError(
                f"ledger {self.ledger.uri!r} records identity {list(existing)}, but this store "
                f"was configured with key_columns {list(self.ledger.identity)}"
            )

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Apply a Spark micro-batch under the streaming query's id (unless ``app_id`` was
        given), so that applications sharing the ledger never share claims."""
        query_id = self._query_id(batch_df)
        if query_id is not None:
            if not self._app_id_given:
                self.ledger.app_id = f"{QUERY_APP_ID_PREFIX}:{query_id}"
            if isinstance(self.sink, FollowsStreamingQuery):
                self.sink.bind_streaming_query(query_id)
        return super().apply_dataframe(batch_df, batch_id)

    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        if isinstance(self.sink, ChecksRows):
            # A row the sink refuses is found before the ledger claims it as applied.
            self.sink.check(table)
        owned = self.ledger.claim(table, batch_id).rows
        maybe_crash(CRASH_BEFORE_SINK)
        # A sink may return False to say it had already applied this batch id (a replay after
        # the sink's commit); only the report uses it.
        applied = self.sink(owned, batch_id) if owned.num_rows else True
        maybe_crash(CRASH_AFTER_SINK)
        self._maintain(batch_id)
        if applied is False:
            return UpsertOutcome(0, table.num_rows, "sink-skipped-batch")
        return UpsertOutcome(owned.num_rows, table.num_rows - owned.num_rows, "ledger")

    def _applied(self, keys: pa.Table) -> list[bool] | None:
        fresh = self.ledger.new_rows(keys)
        return [not new for new in contained(keys, fresh)]

    def _check_rows(self) -> RowChecker | None:
        return OneByOne(self.sink) if isinstance(self.sink, ChecksRows) else None

    def _maintain(self, batch_id: int) -> None:
        """Automatic pruning and compaction; a failure is logged, the recorded batch stands."""
        try:
            if self.prune_every is not None and (batch_id + 1) % self.prune_every == 0:
                result = self.ledger.prune(self.retention)
                logger.info("ledger %s: pruned %d identities", self.ledger.uri, result.deleted_rows)
            if self.compact_every is not None and (batch_id + 1) % self.compact_every == 0:
                done = self.ledger.compact(vacuum_retention=self.vacuum_retention)
                logger.info(
                    "ledger %s: compacted %d files into %d",
                    self.ledger.uri,
                    done.files_removed,
                    done.files_added,
                )
        except Exception:
            # Maintenance only bounds the ledger's size; the batch is already recorded, so
            # failing it here would only make Spark replay a batch that is a no-op.
            logger.warning(
                "ledger %s: maintenance after batch %d failed; retried later",
                self.ledger.uri,
                batch_id,
                exc_info=True,
            )
