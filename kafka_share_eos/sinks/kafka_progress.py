"""The progress topic of Kafka topic sinks: one marker per committed batch, keyed by app_id.

A marker is written in the batch's own transaction, so a read_committed reader finds it exactly
when the batch's records are committed. It names the batch (id, record count, digest of the
records' source identities) and every source record the application committed so far, as
offset ranges per partition: a record the broker delivers again in a later batch (its
acknowledgement was lost in a crash) is found there. One application's offsets are mostly
contiguous, so the ranges stay few; ranges that end more than the redelivery window below a
partition's highest committed offset are dropped, since the broker can no longer redeliver
them (the argument is in :mod:`kafka_share_eos.sharegroup.redelivery`), so several
applications' interleaved offsets stay bounded too. The topic is compacted: only each
application's last marker is kept, which is all a restarted writer needs.
"""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka as ck
import confluent_kafka.admin as ck_admin
import pyarrow as pa

from kafka_share_eos import formats
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.errors import KafkaTransactionError
from kafka_share_eos.sharegroup.group_config import admin_config
from kafka_share_eos.sharegroup.redelivery import REDELIVERY_WINDOW

DEFAULT_PROGRESS_TOPIC = "kafka-share-eos-progress"
IDENTITY = ("topic", "partition", "offset")


Identity = tuple[str, int, int]
"""A source record's ``(topic, partition, offset)``."""

Offsets = dict[tuple[str, int], list[int]]
"""Source offsets per ``(topic, partition)``, each list ascending."""


def batch_offsets(rows: pa.Table) -> Offsets:
    """The rows' source offsets per ``(topic, partition)``, grouped by Arrow (a batch holds
    each identity once)."""
    groups = rows.select(IDENTITY).group_by(["topic", "partition"], use_threads=False).aggregate(
        [("offset", "list")]
    )
    return {
        (topic, partition): sorted(offsets)
        for topic, partition, offsets in zip(
            *(groups[c].to_pylist() for c in ("topic", "partition", "offset_list")), strict=True
        )
    }


def _runs(offsets: list[int]) -> list[list[int]]:
    """Ascending, distinct ``offsets`` as inclusive ranges of consecutive offsets."""
    if not offsets:
        return []
    runs: list[list[int]] = []
    start = previous = offsets[0]
    for offset in offsets[1:]:
        if offset != previous + 1:
            runs.append([start, previous])
            start = offset
        previous = offset
    runs.append([start, previous])
    return runs


@dataclass
class CommittedRecords:
    """Source records as sorted, disjoint, inclusive offset ranges per (topic, partition)."""

    ranges: dict[tuple[str, int], list[list[int]]] = field(default_factory=dict)

    def __contains__(self, identity: Identity) -> bool:
        topic, partition, offset = identity
        spans = self.ranges.get((topic, partition), [])
        at = bisect.bisect_right(spans, [offset, float("inf")]) - 1
        return at >= 0 and spans[at][0] <= offset <= spans[at][1]

    def may_hold(self, offsets: Offsets) -> bool:
        """Whether any of ``offsets`` could be among these records: False when each partition's
        lowest offset is above the highest committed there, the usual case."""
        return any(
            key in self.ranges and first[0] <= self.ranges[key][-1][1]
            for key, first in offsets.items()
        )

    def with_offsets(self, offsets: Offsets) -> CommittedRecords:
        """These records and ``offsets``, neighbouring ranges merged."""
        ranges = {key: [list(span) for span in spans] for key, spans in self.ranges.items()}
        for key, batch in offsets.items():
            spans = sorted(ranges.get(key, []) + _runs(batch))
            merged: list[list[int]] = []
            for start, end in spans:
                if merged and start <= merged[-1][1] + 1:
                    merged[-1][1] = max(merged[-1][1], end)
                else:
                    merged.append([start, end])
            final = merged[-1][1] - REDELIVERY_WINDOW
            ranges[key] = [span for span in merged if span[1] >= final]
        return CommittedRecords(ranges)

    def to_json(self) -> list[list[Any]]:
        """``[[topic, partition, [[start, end], ...]], ...]``."""
        return [[topic, partition, spans] for (topic, partition), spans in self.ranges.items()]

    @classmethod
    def from_json(cls, value: list[list[Any]]) -> CommittedRecords:
        """Read back what :meth:`to_json` wrote."""
        return cls({(str(t), int(p)): [[int(s), int(e)] for s, e in spans]
                    for t, p, spans in value})


def identities(rows: pa.Table) -> list[Identity]:
    """The rows' source identities, in row order."""
    return list(zip(*(rows[c].to_pylist() for c in IDENTITY), strict=True))


@dataclass(frozen=True)
class Marker:
    """A batch an application committed (id, record count, identity digest), and every record
    it committed up to that batch."""

    batch_id: int
    records: int
    digest: str
    committed: CommittedRecords = field(default_factory=CommittedRecords, compare=False)

    @classmethod
    def of(cls, batch: Offsets, batch_id: int, before: Marker | None) -> Marker:
        """The marker of the records ``batch`` as batch ``batch_id`` after ``before``: the
        digest does not depend on the records' order."""
        ordered = [[topic, partition, offsets] for (topic, partition), offsets in sorted(
            batch.items())]
        digest = hashlib.sha256(json.dumps(ordered).encode()).hexdigest()
        committed = before.committed if before is not None else CommittedRecords()
        records = sum(len(offsets) for offsets in batch.values())
        return cls(batch_id, records, digest, committed.with_offsets(batch))

    def to_bytes(self, app_id: str) -> bytes:
        """The marker as the progress topic's record value, with its format version."""
        return json.dumps({formats.FIELD: formats.PROGRESS_MARKER,
                           "app_id": app_id, "batch_id": self.batch_id,
                           "records": self.records, "digest": self.digest,
                           "committed": self.committed.to_json()}).encode()

    @classmethod
    def from_bytes(cls, value: bytes, where: str) -> Marker:
        """A marker read back from the progress topic, at ``where``.

        Raises:
            UnsupportedFormatError: a later release wrote it, in a format this one cannot read.
        """
        fields = json.loads(value)
        formats.check_format("progress marker", fields.get(formats.FIELD),
                             formats.PROGRESS_MARKER, where)
        return cls(int(fields["batch_id"]), int(fields["records"]), str(fields["digest"]),
                   CommittedRecords.from_json(fields.get("committed", [])))


def records_to_end(
    consumer: ck.Consumer, topic: str, partitions: Iterable[int], timeout_s: float
) -> Iterator[ck.Message]:
    """Every record of ``topic``'s ``partitions`` from the beginning to the end the consumer
    can see (for read_committed, the last stable offset); a consumer with
    ``enable.partition.eof`` is assigned them for the reading.

    Raises:
        KafkaTransactionError: the end was not reached within ``timeout_s`` of a poll, or the
            brokers failed the read.
    """
    ended: set[int | None] = set()
    wanted = sorted(partitions)
    consumer.assign([ck.TopicPartition(topic, p, ck.OFFSET_BEGINNING) for p in wanted])
    try:
        while len(ended) < len(wanted):
            message = consumer.poll(timeout_s)
            if message is None:
                raise KafkaTransactionError(
                    f"topic {topic!r} could not be read to its end in {timeout_s:.0f} s"
                )
            error = message.error()
            if error is None:
                yield message
            elif error.code() == ck.KafkaError._PARTITION_EOF:
                ended.add(message.partition())
            else:
                raise KafkaTransactionError(f"reading topic {topic!r}: {error}")
    finally:
        consumer.unassign()


class ProgressTopic(ProcessLocal):
    """Reads an application's last committed marker (read_committed), creating the compacted
    topic on a cluster that has none.

    Its clients stay connected until :meth:`close`: on the embedded broker a client that
    disconnects drops every share session, the pipeline's source consumers' too. A pickled
    copy connects clients of its own.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_admin=nothing, _consumer=nothing)

    def __init__(self, config: Mapping[str, Any], topic: str, timeout_s: float) -> None:
        self.topic = topic
        self.timeout_s = timeout_s
        self._config = admin_config(config)
        self._admin: ck_admin.AdminClient | None = None
        self._consumer: ck.Consumer | None = None

    def last_marker(self, app_id: str) -> Marker | None:
        """The last marker ``app_id`` committed, None when it committed none."""
        if not self._ready():
            return None
        consumer = self._reader()
        partitions = consumer.list_topics(self.topic, self.timeout_s).topics[self.topic].partitions
        last: Marker | None = None
        for message in records_to_end(consumer, self.topic, partitions, self.timeout_s):
            value = message.value()
            if message.key() == app_id.encode() and value:
                where = (f"topic {self.topic!r} partition {message.partition()} offset "
                         f"{message.offset()} (app_id {app_id!r})")
                last = Marker.from_bytes(value, where)
        return last

    def close(self) -> None:
        """Disconnect the clients."""
        if self._consumer is not None:
            self._consumer.close()
        self._consumer = self._admin = None

    def _reader(self) -> ck.Consumer:
        if self._consumer is None:
            self._consumer = ck.Consumer({
                **self._config, "group.id": "kafka-share-eos-progress",
                "enable.auto.commit": False, "isolation.level": "read_committed",
                "enable.partition.eof": True,
            })
        return self._consumer

    def _ready(self) -> bool:
        """Whether the topic exists, after creating it where the cluster lets clients."""
        if self._admin is None:
            self._admin = ck_admin.AdminClient(self._config)
        metadata = self._admin.list_topics(timeout=self.timeout_s)
        if self.topic in metadata.topics:
            return True
        if metadata.controller_id not in metadata.brokers:
            # The embedded broker creates no topic through the admin API: the first batch's
            # transaction creates it, and until then no marker exists.
            return False
        created = self._admin.create_topics([ck_admin.NewTopic(
            self.topic, num_partitions=1, config={"cleanup.policy": "compact"},
        )])
        try:
            created[self.topic].result(self.timeout_s)
        except ck.KafkaException as error:
            if error.args[0].code() != ck.KafkaError.TOPIC_ALREADY_EXISTS:
                raise KafkaTransactionError(
                    f"could not create the progress topic {self.topic!r} (create it, compacted, "
                    f"or give the sink one the application may write): {error}"
                ) from error
        return True
