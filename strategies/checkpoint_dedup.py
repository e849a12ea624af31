"""Exactly-once effects for sinks that can neither upsert nor prepare: a Delta identity ledger.

Per micro-batch: drop identities repeated inside the batch, drop identities the ledger already
holds, hand only the new rows to the user's sink, then record their identities in the ledger with
the Delta application transaction ``(app_id, batch_id)``. A batch the ledger already recorded is
skipped whole. docs/checkpoint-dedup.md argues each crash point and states what the sink must
promise (atomic, and a no-op when called again with a batch id it already applied);
:class:`~kafka_share_eos.ledger.delta_sink.DeltaAppendSink` keeps that promise.

delta-rs is not safe after ``fork()``: the store runs in the Spark driver (``foreachBatch``).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Unpack

import pyarrow as pa

from kafka_share_eos._extras import require
from kafka_share_eos.faults import maybe_crash
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION, compact
from kafka_share_eos.ledger.identity_ledger import DEFAULT_APP_ID, IdentityLedger
from kafka_share_eos.ledger.retention import RetentionPolicy, prune
from kafka_share_eos.sinks import SinkConfigurationError, UpsertOutcome, contained

from .base import BatchStrategy, StrategyOptions
from .identity import RecordIdentity

logger = logging.getLogger("kafka_share_eos.strategies")

Sink = Callable[[pa.Table, int], Any]
"""A user sink: ``sink(new_rows, batch_id)``, atomic and idempotent per batch id; it may return
False when it skipped a batch id it had already applied."""

CRASH_BEFORE_SINK = "dedup.before_sink"
CRASH_AFTER_SINK = "dedup.after_sink"
CRASH_AFTER_LEDGER = "dedup.after_ledger"


class CheckpointDedupStore(BatchStrategy):
    """A ``foreachBatch`` strategy that applies each record identity to ``sink`` exactly once.

    Args:
        ledger: Delta table URI (local path or object-store URI) of the identity ledger; one
            ledger per streaming query.
        sink: ``sink(table, batch_id)`` receiving only rows never applied before. It must apply
            a batch atomically and do nothing when called again with a batch id it already
            applied (:class:`~kafka_share_eos.ledger.delta_sink.DeltaAppendSink` does).
        key_columns: identity columns; ``(topic, partition, offset)`` when None. Business keys
            make the first applied row of each key win.
        app_id: Delta application id the ledger records batch ids under. Batch ids restart at
            0 with a new Spark checkpoint: a new checkpoint needs a new ``app_id`` (and ledger).
        storage_options: delta-rs storage options for the ledger.
        retention: which identities pruning may drop.
        prune_every: prune automatically after every this many batches (None: never).
        compact_every: compact and vacuum the ledger after every this many batches (None: never).
        vacuum_retention: how long files replaced by compaction stay on storage.
        options: see :class:`StrategyOptions` (``transform``, ``dead_letters``, ...). Rows the
            user's sink refuses fail the batch: a sink applied at most once per batch id cannot
            be probed row by row.

    Raises:
        MissingExtraError: deltalake is not installed.
        SinkConfigurationError: ``sink`` is not callable, or ``prune_every`` or
            ``compact_every`` is below 1.
    """

    def __init__(
        self,
        ledger: str,
        sink: Sink,
        *,
        key_columns: Sequence[str] | None = None,
        app_id: str = DEFAULT_APP_ID,
        storage_options: Mapping[str, str] | None = None,
        retention: RetentionPolicy | None = None,
        prune_every: int | None = None,
        compact_every: int | None = None,
        vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION,
        **options: Unpack[StrategyOptions],
    ) -> None:
        require("deltalake", "delta", "CheckpointDedupStore")
        identity = RecordIdentity.of(key_columns)
        super().__init__(identity, "CheckpointDedupStore", **options)
        for name, every in (("prune_every", prune_every), ("compact_every", compact_every)):
            if every is not None and every < 1:
                raise SinkConfigurationError(f"{name} must be >= 1 or None, got {every}")
        if not callable(sink):
            raise SinkConfigurationError(f"sink must be callable(table, batch_id), got {sink!r}")
        self.ledger = IdentityLedger(
            ledger, identity=identity.key_columns, app_id=app_id, storage_options=storage_options
        )
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

    def _prepare(self, schema: pa.Schema) -> None:
        table = self.ledger.location.table()
        if table is None:
            return
        existing = IdentityLedger.existing(
            self.ledger.uri,
            app_id=self.ledger.app_id,
            storage_options=self.ledger.location.storage_options,
        ).identity
        if existing != self.ledger.identity:
            raise SinkConfigurationError(
                f"ledger {self.ledger.uri!r} records identity {list(existing)}, but this store "
                f"was configured with key_columns {list(self.ledger.identity)}"
            )

    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        recorded = self.ledger.last_batch()
        if recorded is not None and recorded >= batch_id:
            return UpsertOutcome(0, table.num_rows, "skipped-batch")
        fresh = self.ledger.new_rows(table, refresh=False)
        maybe_crash(CRASH_BEFORE_SINK)
        # A sink may return False to say it had already applied this batch id (a replay after
        # "sink done, ledger not"); only the report uses it.
        applied = self.sink(fresh, batch_id) if fresh.num_rows else True
        maybe_crash(CRASH_AFTER_SINK)
        self.ledger.record(fresh, batch_id)
        maybe_crash(CRASH_AFTER_LEDGER)
        self._maintain(batch_id)
        if applied is False:
            return UpsertOutcome(0, table.num_rows, "sink-skipped-batch")
        return UpsertOutcome(fresh.num_rows, table.num_rows - fresh.num_rows, "ledger")

    def _applied(self, keys: pa.Table) -> list[bool] | None:
        fresh = self.ledger.new_rows(keys)
        return [not new for new in contained(keys, fresh)]

    def _maintain(self, batch_id: int) -> None:
        """Automatic pruning and compaction; a failure is logged, the recorded batch stands."""
        try:
            if self.prune_every is not None and (batch_id + 1) % self.prune_every == 0:
                result = prune(self.ledger, self.retention)
                logger.info("ledger %s: pruned %d identities", self.ledger.uri, result.deleted_rows)
            if self.compact_every is not None and (batch_id + 1) % self.compact_every == 0:
                done = compact(self.ledger, vacuum_retention=self.vacuum_retention)
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
