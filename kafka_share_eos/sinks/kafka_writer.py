"""Batches written to a Kafka topic in producer transactions, each with a marker of its batch.

One transaction per batch holds the batch's records and a marker ``(app_id, batch_id, digest of
the records' source identities)`` on a compacted progress topic. A read_committed reader sees
the records and the marker together or not at all. Before its first batch the writer calls
``init_transactions`` with a ``transactional.id`` derived from ``app_id``: that fences any
earlier writer of the application (a zombie of a killed query) and aborts its open
transaction, and only then reads the application's last committed marker. A batch whose
marker is already committed is a replay and is skipped; the same batch id with other records
is refused.

librdkafka's mock cluster (the embedded broker) neither fences an older writer nor hides aborted
records from read_committed readers: there the markers still make replays no-ops, but a writer
killed mid-transaction leaves its records visible. The guarantee holds on Apache Kafka.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import confluent_kafka as ck
import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos import faults
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.errors import (
    AppIdConflictError,
    BatchIdReusedError,
    ConfigurationError,
    KafkaTransactionError,
    ValueNotStorableError,
)
from kafka_share_eos.sinks.columns import require_columns
from kafka_share_eos.sinks.kafka_progress import (
    DEFAULT_PROGRESS_TOPIC,
    IDENTITY,
    Marker,
    ProgressTopic,
    batch_offsets,
    identities,
)
from kafka_share_eos.sinks.sql_refusals import error_chain
from kafka_share_eos.sinks.target_checks import check_kafka_topic

SOURCE_HEADER = "kse.source"
"""The header naming an output record's source record, ``topic:partition:offset:delivery count``
(the count empty when the batch has none). One header, not one per field: librdkafka and the
broker handle every header of every record, and four cost the sink a third of its throughput.
Left out with ``source_header=False``: exactly once rests on the batch's marker, which lists the
source records the application committed, never on this header."""
SOURCE_COLUMNS = (*IDENTITY, "deliveryCount")
Headers = Mapping[str, Any] | list[tuple[str, Any]]
Failure = tuple[ck.Message | Headers | None, ck.KafkaError]
"""A record the client or the broker refused (the message, or its headers if any) and why."""
_PURGED = frozenset({ck.KafkaError._PURGE_QUEUE, ck.KafkaError._PURGE_INFLIGHT})
_PURGED_ATTEMPTS = 3
# Errors about a record itself: the rest of the batch can be written without it.
_RECORD_ERRORS = frozenset({
    ck.KafkaError.MSG_SIZE_TOO_LARGE,
    ck.KafkaError.TOPIC_AUTHORIZATION_FAILED, ck.KafkaError.UNKNOWN_TOPIC_OR_PART,
    ck.KafkaError._UNKNOWN_TOPIC, ck.KafkaError._UNKNOWN_PARTITION,
    ck.KafkaError.INVALID_RECORD, ck.KafkaError.RECORD_LIST_TOO_LARGE,
    ck.KafkaError.INVALID_MSG,
})


@dataclass(frozen=True)
class Columns:
    """Which of the batch's columns become the output record's key, value, headers and
    partition (None: not taken from the batch)."""

    key: str | None = "key"
    value: str = "value"
    headers: str | None = "headers"
    partition: str | None = None


class KafkaTopicWriter(ProcessLocal):
    """Writes batches to ``topic`` exactly once per ``(app_id, batch id)``; see the module.

    A pickled copy keeps the configuration and the ``app_id``, not the producer nor the last
    marker this process committed: in its own process it starts as a restarted application
    does, with a producer of the same ``transactional.id`` whose ``init_transactions`` fences
    the writer it was copied from (and aborts what that left open), then reads the last
    committed marker. The copy takes over as a restarted query takes over from its
    predecessor: a batch the original writes afterwards fails as fenced.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_producer=nothing, _last=nothing)

    def __init__(
        self,
        topic: str,
        config: Mapping[str, Any],
        *,
        app_id: str,
        progress_topic: str = DEFAULT_PROGRESS_TOPIC,
        columns: Columns = Columns(),
        timeout_s: float = 60.0,
        source_header: bool = True,
    ) -> None:
        if "bootstrap.servers" not in config:
            raise ConfigurationError("KafkaTopicSink's config needs 'bootstrap.servers'")
        if "transactional.id" in config:
            raise ConfigurationError(
                "KafkaTopicSink sets transactional.id from app_id (one per application and "
                "query, stable across restarts); give app_id instead of transactional.id"
            )
        self.topic = topic
        self.config = dict(config)
        self.app_id = app_id
        self.progress_topic = progress_topic
        self.columns = columns
        self.timeout_s = timeout_s
        self.source_header = source_header
        self._producer: ck.Producer | None = None
        self._progress = ProgressTopic(config, progress_topic, timeout_s)
        self._last: Marker | None = None

    @property
    def transactional_id(self) -> str:
        """The producer's ``transactional.id``: the application's, stable across restarts."""
        return f"kafka-share-eos:{self.app_id}"

    def check_target(self) -> None:
        """Check, before any record is read, that the output topic exists (the progress topic
        is the writer's own to create).

        Raises:
            TargetTableError: the topic does not exist, or the cluster did not answer.
        """
        check_kafka_topic(self.config, self.topic, f"KafkaTopicSink[{self.topic}]")

    def write(self, rows: pa.Table, batch_id: int) -> int | None:
        """Write ``rows`` as batch ``batch_id`` in one transaction with its marker, leaving out
        records the application committed in an earlier batch (delivered again after a lost
        acknowledgement). Returns how many records were written; None when the batch itself is
        already committed (a replay), which writes nothing.

        Raises:
            BatchIdReusedError: the batch was committed with other records.
            AppIdConflictError: the application committed a later batch already.
            ValueNotStorableError: the broker refused a record (too large, no such topic, not
                authorised); nothing of the batch was committed.
            KafkaTransactionError: the transaction failed, timed out or was fenced.
        """
        require_columns(rows, [*IDENTITY, self.columns.value],
                        f"the batch for Kafka topic {self.topic!r}")
        self._open()
        last = self._last
        batch = batch_offsets(rows)
        marker = Marker.of(batch, batch_id, last)
        if self._skips(marker):
            return None
        if last is not None and last.committed.may_hold(batch):
            fresh = [identity not in last.committed for identity in identities(rows)]
            rows = rows.filter(pa.array(fresh, pa.bool_()))
        self._transact(rows, marker)
        self._last = marker
        return int(rows.num_rows)

    def check(self, rows: pa.Table) -> None:
        """Raise what writing ``rows`` would raise about a record: they are produced in a
        transaction that is then aborted (read_committed readers never see them)."""
        self._transact(rows, None)

    def _transact(self, rows: pa.Table, marker: Marker | None) -> None:
        """Produce ``rows`` in a transaction, committed with ``marker``, aborted without one.

        The transaction after an aborted one may find its records purged by the abort's epoch
        bump before they were sent: such an attempt is made again.
        """
        for _ in range(_PURGED_ATTEMPTS):
            producer = self._open()
            try:
                producer.begin_transaction()
                failures = self._produce(producer, rows, marker)
                if marker is not None:
                    faults.maybe_crash(faults.SINK_MID_WRITE)
                producer.flush(self.timeout_s)
                if failures or marker is None:
                    producer.abort_transaction(self.timeout_s)
                else:
                    producer.commit_transaction(self.timeout_s)
            except BaseException as error:
                self._abort(error)
                raise
            refused = [f for f in failures if f[1].code() not in _PURGED]
            if refused:
                raise _refused(refused, self.topic, self.progress_topic)
            if not failures:
                return
        raise KafkaTransactionError(
            f"Kafka topic {self.topic!r}: the records were purged before they were sent in "
            f"{_PURGED_ATTEMPTS} transactions in a row"
        )

    def close(self) -> None:
        """Drop the producer and the progress topic's clients; the next batch starts anew."""
        if self._producer is not None:
            # Between batches no transaction is open, so close() does not wait on brokers.
            self._producer.close()
            self._producer = None
        self._progress.close()

    def _open(self) -> ck.Producer:
        if self._producer is None:
            producer = ck.Producer({
                **self.config, "transactional.id": self.transactional_id,
                "enable.idempotence": True, "acks": "all",
                "transaction.timeout.ms": int(self.timeout_s * 1000),
                # Only failures are looked at: a report per delivered record costs a Python
                # call and a copy of its headers.
                "delivery.report.only.error": True,
            })
            try:
                producer.init_transactions(self.timeout_s)
            except ck.KafkaException as error:
                raise _transaction_error(error, self.transactional_id) from error
            self._producer = producer
            # Read after init_transactions, which aborted what an older writer left open.
            self._last = self._progress.last_marker(self.app_id)
        return self._producer

    def _skips(self, marker: Marker) -> bool:
        last = self._last
        if last is None or last.batch_id < marker.batch_id:
            return False
        if last.batch_id > marker.batch_id:
            raise AppIdConflictError(
                f"Kafka topic {self.topic!r}: app_id {self.app_id!r} committed batch "
                f"{last.batch_id} already, so batch {marker.batch_id} would be skipped: another "
                "application or an earlier checkpoint uses this app_id"
            )
        if last != marker:
            raise BatchIdReusedError(
                f"Kafka topic {self.topic!r}: app_id {self.app_id!r} committed batch "
                f"{marker.batch_id} with {last.records} other record(s) than this batch "
                f"{marker.batch_id} holds ({marker.records}): a batch id names one set of records"
            )
        return True

    def _produce(
        self, producer: ck.Producer, rows: pa.Table, marker: Marker | None
    ) -> list[Failure]:
        """Produce ``marker`` (if any) and ``rows``; the failures the client or the broker
        reported so far, the rest arriving with the flush."""
        failures: list[Failure] = []

        def delivered(error: ck.KafkaError | None, message: ck.Message) -> None:
            # Only stored: after a fatal error the client runs this callback with an exception
            # already set, and any call into the client from here fails (even list.append
            # returns that exception, which _abort finds in the chain).
            if error is not None:
                failures.append((message, error))

        produce = producer.produce
        # The marker goes first, so its partition joins the transaction with the records'
        # rather than in a round trip of its own after them.
        if marker is not None:
            produce(self.progress_topic, marker.to_bytes(self.app_id), self.app_id.encode(),
                    on_delivery=delivered)
        for key, value, headers, partition in _records(rows, self.columns, self.source_header):
            while True:
                try:
                    if partition is None:
                        produce(self.topic, value, key, headers=headers, on_delivery=delivered)
                    else:
                        produce(self.topic, value, key, partition, headers=headers,
                                on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.1)
                except ck.KafkaException as error:
                    failures.append((headers, error.args[0]))
                    break
        return failures

    def _abort(self, error: BaseException) -> None:
        producer = self._producer
        if producer is None:
            return
        try:
            producer.abort_transaction(self.timeout_s)
        except ck.KafkaException as failed:
            # Fenced, fatal or unreachable: a new producer (and init_transactions) is the only
            # way on. Only a fatal one is closed now: closing aborts an open transaction, which
            # waits on unreachable brokers.
            self._producer = None
            if failed.args[0].fatal():
                producer.purge()
                with warnings.catch_warnings():
                    # close() warns that its abort failed: the one that just failed.
                    warnings.simplefilter("ignore", RuntimeWarning)
                    producer.close()
        # A fatal error met inside flush() surfaces as the SystemError of the delivery callback
        # that ran while it was set: the KafkaException is further down the chain.
        kafka = next((e for e in error_chain(error) if isinstance(e, ck.KafkaException)), None)
        if kafka is not None:
            raise _transaction_error(kafka, self.transactional_id) from error


def source_of_header(value: bytes) -> tuple[str, int, int, int | None]:
    """The source record's topic, partition, offset and delivery count (None when unknown)
    a :data:`SOURCE_HEADER` value names (topic names hold no ``:``)."""
    topic, partition, offset, count = value.decode().rsplit(":", 3)
    return topic, int(partition), int(offset), int(count) if count else None


def _source_headers(rows: pa.Table) -> list[bytes]:
    """Each row's :data:`SOURCE_HEADER` value, joined by Arrow rather than row by row."""
    parts = [pc.cast(rows[name], pa.large_string()) if name in rows.column_names
             else pa.chunked_array([pa.nulls(rows.num_rows, pa.large_string())])
             for name in SOURCE_COLUMNS]
    joined = pc.binary_join_element_wise(*parts, pa.scalar(":", pa.large_string()),
                                         null_handling="replace", null_replacement="")
    values: list[bytes] = pc.cast(joined, pa.large_binary()).to_pylist()
    return values


def _records(
    rows: pa.Table, columns: Columns, source_header: bool
) -> Iterable[tuple[Any, Any, Any, Any]]:
    """Each row's key, value, headers (the row's own, then its source identity unless
    ``source_header`` is off; None when there are none) and partition; columns converted at
    once, so the loop only assembles them."""
    # Dicts of bytes, which the garbage collector stops tracking: lists of tuples, one per row,
    # cost several times as much in collections as in building them.
    headers: list[Any] = ([{SOURCE_HEADER: source} for source in _source_headers(rows)]
                          if source_header else [None] * rows.num_rows)
    if columns.headers is not None and columns.headers in rows.column_names:
        # A row's own headers may repeat a key, which only a list keeps.
        for row, own in enumerate(rows[columns.headers].to_pylist()):
            if own:
                headers[row] = [(h["key"], h["value"]) for h in own] + list(
                    (headers[row] or {}).items())
    partitions = (rows[columns.partition].to_pylist()
                  if columns.partition is not None and columns.partition in rows.column_names
                  else [None] * rows.num_rows)
    return zip(_as_bytes(rows, columns.key), _as_bytes(rows, columns.value), headers, partitions,
               strict=True)


def _as_bytes(rows: pa.Table, name: str | None) -> list[bytes | None]:
    """Column ``name`` as bytes: binary of any layout as is, strings UTF-8 encoded, integers and
    anything else as their text; None for a null or an absent column."""
    if name is None or name not in rows.column_names:
        return [None] * rows.num_rows
    column = rows[name]
    kind = column.type
    if pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind):
        column = pc.cast(column, pa.large_string())
    elif not (pa.types.is_binary(kind) or pa.types.is_large_binary(kind)):
        return [None if value is None else value if isinstance(value, bytes)
                else str(value).encode() for value in column.to_pylist()]
    column = pc.cast(column, pa.large_binary())
    values: list[bytes | None] = column.to_pylist()
    return values


def _source_of(record: ck.Message | Headers | None, progress_topic: str) -> str:
    """The source record a produced record's headers name, for an error message."""
    if isinstance(record, ck.Message) and record.topic() == progress_topic:
        return "the batch's marker"
    source: dict[str, Any] = dict(
        (record.headers() if isinstance(record, ck.Message) else record) or ())
    if SOURCE_HEADER not in source:
        # Written without the source header (source_header=False).
        return "a record of the batch"
    topic, partition, offset, _ = source_of_header(bytes(source[SOURCE_HEADER]))
    return f"the record from {topic}[{partition}]@{offset}"


def _refused(failures: list[Failure], topic: str, progress_topic: str) -> Exception:
    """The error of a record the broker refused, before any other failure."""
    record, error = min(failures, key=lambda failure: failure[1].code() not in _RECORD_ERRORS)
    if error.code() in _RECORD_ERRORS:
        return ValueNotStorableError(
            f"Kafka topic {topic!r} refused {_source_of(record, progress_topic)}: {error.str()}"
        )
    return KafkaTransactionError(f"writing to Kafka topic {topic!r} failed: {error.str()}")


def _transaction_error(error: ck.KafkaException, transactional_id: str) -> KafkaTransactionError:
    cause = error.args[0]
    fenced = cause.code() in (ck.KafkaError._FENCED, ck.KafkaError.PRODUCER_FENCED,
                              ck.KafkaError.INVALID_PRODUCER_EPOCH)
    why = (f"another writer with transactional.id {transactional_id!r} took over (a restarted "
           "query, or another application with the same app_id)" if fenced else cause.str())
    return KafkaTransactionError(f"the Kafka transaction failed: {why}; nothing of the batch "
                                 "was committed")
