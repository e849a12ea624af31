"""A Kafka topic as the target: each batch in one producer transaction with a marker of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Unpack

import pyarrow as pa

from kafka_share_eos.sinks import UpsertOutcome
from kafka_share_eos.sinks.kafka_progress import DEFAULT_PROGRESS_TOPIC
from kafka_share_eos.sinks.kafka_writer import Columns, KafkaTopicWriter
from kafka_share_eos.sinks.outcome import OneByOne
from kafka_share_eos.strategies.base import BatchStrategy, StrategyOptions
from kafka_share_eos.strategies.identity import RecordIdentity
from kafka_share_eos.strategies.report import BatchReport

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from kafka_share_eos.sinks import RowChecker

DEFAULT_APP_ID_PREFIX = "kafka-share-eos/kafka-topic"


class KafkaTopicSink(BatchStrategy):
    """Writes each batch to a Kafka topic exactly once, for read_committed readers.

    Each batch is one producer transaction: its records, and a marker of the batch (``app_id``,
    batch id, a digest of the records' source identities) on a compacted progress topic the
    sink creates. A replayed batch whose marker is committed is skipped; the same batch id with
    other records raises :class:`~kafka_share_eos.errors.BatchIdReusedError`. The marker also
    holds every source record the application committed so far (offset ranges), so a record the
    broker delivers again in a later batch, after its acknowledgement was lost, is not written
    twice. The producer's
    ``transactional.id`` comes from ``app_id``, so a restarted query fences its killed
    predecessor and aborts what that left open. Each output record carries its source record's
    topic, partition, offset and delivery count in one header, ``kse.source`` =
    ``topic:partition:offset:delivery count`` (e.g. ``orders:3:1207:1``), after the source's own
    headers, unless ``source_header=False``.

    One application: exactly once. Several applications on one share group: put this sink
    behind :class:`~kafka_share_eos.strategies.CheckpointDedupStore` (``CheckpointDedupStore(
    ledger, sink)``), whose ledger decides which application owns a record; alone, two
    applications given the same record (a lock that expired) each commit it under their own
    ``app_id``.

    Args:
        topic: the output topic.
        config: confluent-kafka producer settings, passed through (``bootstrap.servers``,
            security); ``transactional.id`` is set from ``app_id``.
        app_id: the application's id, stable across its restarts: by default the streaming
            query's id (stable from one checkpoint), ``kafka-share-eos/kafka-topic:<topic>``
            outside Spark.
        progress_topic: the compacted topic of the batches' markers, shared by applications.
        key_column, value_column, headers_column: the columns that become each record's key,
            value and headers (``key``, ``value``, ``headers``, as Spark's Kafka sink and the
            ``kafka-share`` source name them); a key or headers column that is absent is left
            out. Strings are written UTF-8 encoded.
        partition_column: a column holding each record's output partition. None by default:
            the ``partition`` column of the source's rows is the partition the record came
            from, not where it should go, so records are partitioned by key.
        timeout_s: bound on a transaction, its commit and reading the progress topic.
        source_header: whether each output record carries the ``kse.source`` header. Off, the
            sink writes faster (the broker and the client handle no per-record header) and the
            guarantee is the same, since it rests on the batch's marker; readers then cannot
            tell which source record an output record came from, nor its delivery count, and
            an error about a refused record cannot name it.
        **options: :class:`~kafka_share_eos.strategies.StrategyOptions` (``transform``,
            ``dead_letters``, ...). With dead letters, a record the broker refuses (too large,
            a topic that does not exist or the principal may not write) is dead-lettered and
            the rest of the batch is committed; finding it produces halves of the batch in
            transactions that are aborted, which read_uncommitted readers see.

    Raises:
        ConfigurationError: ``config`` has no ``bootstrap.servers``, or sets
            ``transactional.id``.
        TargetTableError: ``topic`` does not exist, or the cluster did not list its topics
            (checked when the sink is built, unless ``check_on_create=False``).
    """

    def __init__(
        self,
        topic: str,
        config: Mapping[str, Any],
        *,
        app_id: str | None = None,
        progress_topic: str = DEFAULT_PROGRESS_TOPIC,
        key_column: str | None = "key",
        value_column: str = "value",
        headers_column: str | None = "headers",
        partition_column: str | None = None,
        timeout_s: float = 60.0,
        source_header: bool = True,
        **options: Unpack[StrategyOptions],
    ) -> None:
        super().__init__(RecordIdentity.of(None), f"KafkaTopicSink[{topic}]", **options)
        self._app_id_given = app_id is not None
        self.writer = KafkaTopicWriter(
            topic, config, app_id=app_id or f"{DEFAULT_APP_ID_PREFIX}:{topic}",
            progress_topic=progress_topic,
            columns=Columns(key_column, value_column, headers_column, partition_column),
            timeout_s=timeout_s, source_header=source_header,
        )
        self._checked()

    @property
    def app_id(self) -> str:
        """The id the batches' markers and the producer's ``transactional.id`` are under."""
        return self.writer.app_id

    def bind_streaming_query(self, query_id: str) -> None:
        """Record batches under the streaming query's id, unless an ``app_id`` was given."""
        if not self._app_id_given and self.writer.app_id != f"{DEFAULT_APP_ID_PREFIX}:{query_id}":
            self.writer.close()
            self.writer.app_id = f"{DEFAULT_APP_ID_PREFIX}:{query_id}"

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Apply a Spark micro-batch under the streaming query's id (unless ``app_id`` was
        given)."""
        query_id = self._query_id(batch_df)
        if query_id is not None:
            self.bind_streaming_query(query_id)
        return super().apply_dataframe(batch_df, batch_id)

    def __call__(self, batch: Any, batch_id: int) -> Any:
        """``foreachBatch(sink)`` with a DataFrame; as the sink of a
        :class:`~kafka_share_eos.strategies.CheckpointDedupStore`, an Arrow table of the records
        the ledger gave this application, returning False when the batch was committed before."""
        if isinstance(batch, pa.Table):
            return self.writer.write(batch, batch_id) is not None
        return super().__call__(batch, batch_id)

    def close(self) -> None:
        """Close the producer (the next batch opens a new one)."""
        self.writer.close()

    def _targets(self) -> Sequence[object]:
        return (self.writer,)

    def _prepare(self, schema: pa.Schema) -> None:
        """Nothing to create up front: the progress topic is made on the first batch."""

    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        written = self.writer.write(table, batch_id)
        if written is None:
            return UpsertOutcome(0, table.num_rows, "skipped-batch")
        return UpsertOutcome(written, table.num_rows - written, "transaction")

    def _check_rows(self) -> RowChecker | None:
        return OneByOne(self.writer)
