"""Dead letters in a Kafka topic: the original key and value, the rest in headers."""

from __future__ import annotations

import datetime as dt
import logging
import uuid
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.sharegroup.access import SignInWatch, access_error
from kafka_share_eos.sinks import error_chain
from kafka_share_eos.sinks.target_checks import check_kafka_topic

HEADER_PREFIX = "kse."
_HEADER_COLUMNS = tuple(
    name for name in DEAD_LETTER_SCHEMA.names if name not in ("key", "value")
)
_FLUSH_TIMEOUT_S = 60.0

# librdkafka logs each failed connection of the reader to stderr, a line every 50 ms while a
# broker is down; the failure itself is raised. An application's logging still receives them.
_READER_LOG = logging.getLogger(f"{__name__}.reader")
_READER_LOG.addHandler(logging.NullHandler())


class KafkaDeadLetters(DeadLetterSink, ProcessLocal):
    """Dead letters produced to ``topic``; ``config`` goes to the confluent-kafka ``Producer``
    unchanged (security settings included).

    Each letter keeps the record's key and value; every other column travels as a header
    ``kse.<column>`` (UTF-8 text). :meth:`write` returns once the broker acknowledged every
    letter. A topic cannot refuse a repeat, so a replayed batch may produce a letter again:
    readers keep the first per ``kse.letter_id`` (:meth:`read` does).

    A pickled copy keeps the topic and the settings; its producer, and the watch on that
    producer's sign-ins, are its own, created on its first write.

    Raises:
        ConfigurationError: ``config`` has no ``bootstrap.servers``.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_producer=nothing, _sign_in=SignInWatch)

    def __init__(self, topic: str, config: Mapping[str, Any]) -> None:
        if "bootstrap.servers" not in config:
            raise ConfigurationError("KafkaDeadLetters config needs 'bootstrap.servers'")
        self.topic = topic
        self.config = dict(config)
        self._producer: Any = None
        self._sign_in = SignInWatch()

    @property
    def target(self) -> str:
        return f"kafka:{self.topic}"

    def check_target(self) -> None:
        """Check, before any record is read, that the topic exists.

        Raises:
            TargetTableError: the topic does not exist, or the cluster did not answer.
        """
        check_kafka_topic(self.config, self.topic, "KafkaDeadLetters")

    def write(self, letters: pa.Table) -> int:
        from confluent_kafka import KafkaError, KafkaException, Producer

        if letters.num_rows == 0:
            return 0
        if self._producer is None:
            self._producer = Producer(
                {"enable.idempotence": True, **self.config, "error_cb": self._sign_in}
            )
        failures: list[KafkaError] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(err)

        try:
            for letter in letters.to_pylist():
                headers = [
                    (HEADER_PREFIX + name, _header(letter[name]))
                    for name in _HEADER_COLUMNS if letter[name] is not None
                ]
                self._producer.produce(self.topic, key=letter["key"], value=letter["value"],
                                       headers=headers, on_delivery=delivered)
                self._producer.poll(0)
            undelivered = self._producer.flush(_FLUSH_TIMEOUT_S)
        except Exception as error:
            # A fatal error (an ACL refusing the producer id) surfaces wrapped in the error of
            # the delivery callback that ran while it was set.
            failures += [e.args[0] for e in error_chain(error) if isinstance(e, KafkaException)]
            self._drop_if_fatal(failures)
            self._refuse(failures, error)
            raise
        self._drop_if_fatal(failures)
        self._refuse(failures)
        if undelivered:
            self._sign_in.raise_refusal(self.config, lasting=False)
        elif not failures:
            self._sign_in.clear()
        if failures or undelivered:
            raise KafkaException(
                f"dead letters to topic {self.topic!r}: {undelivered} undelivered, "
                f"{len(failures)} failed ({'; '.join(map(str, failures[:3]))})"
            )
        return int(letters.num_rows)

    def _refuse(self, failures: list[Any], cause: BaseException | None = None) -> None:
        """Raise the first failure that is a refusal of access, naming the topic."""
        for failure in failures:
            refused = access_error(failure, self.config, [self.topic], writes=True)
            if refused is not None:
                raise refused from cause

    def _drop_if_fatal(self, failures: list[Any]) -> None:
        """Drop a producer that met a fatal error: only a new one can write again (after the
        missing grant is added, say)."""
        if self._producer is not None and any(failure.fatal() for failure in failures):
            producer, self._producer = self._producer, None
            producer.purge()

    def read(self) -> pa.Table:
        """Every letter in the topic, first per record, read from the start to the end."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer({**self.config, "group.id": f"kse-dead-letters-{uuid.uuid4()}",
                             "enable.auto.commit": False, "auto.offset.reset": "earliest",
                             "logger": _READER_LOG})
        rows: dict[str, dict[str, Any]] = {}
        try:
            partitions = consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
            ends: dict[int, int] = {}
            assigned = []
            for partition in partitions:
                low, high = consumer.get_watermark_offsets(TopicPartition(self.topic, partition))
                if high > low:
                    ends[partition] = high
                    assigned.append(TopicPartition(self.topic, partition, low))
            consumer.assign(assigned)
            while ends:
                msg = consumer.poll(1.0)
                if msg is None or msg.error():
                    continue
                letter = _from_message(msg)
                rows.setdefault(letter["letter_id"], letter)
                partition, offset = msg.partition(), msg.offset()
                if partition is not None and offset is not None and offset + 1 >= ends.get(
                    partition, 0
                ):
                    ends.pop(partition, None)
        finally:
            consumer.close()
        return pa.Table.from_pylist(list(rows.values()), schema=DEAD_LETTER_SCHEMA)

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(_FLUSH_TIMEOUT_S)
            self._producer = None


def _header(value: Any) -> bytes:
    text = value.isoformat() if isinstance(value, dt.datetime) else str(value)
    return text.encode()


def _from_message(msg: Any) -> dict[str, Any]:
    headers = {
        name[len(HEADER_PREFIX):]: raw.decode()
        for name, raw in (msg.headers() or []) if name.startswith(HEADER_PREFIX)
    }
    letter: dict[str, Any] = {"key": msg.key(), "value": msg.value()}
    for field in DEAD_LETTER_SCHEMA:
        if field.name in letter:
            continue
        text = headers.get(field.name)
        if text is None or pa.types.is_string(field.type):
            letter[field.name] = text
        elif pa.types.is_timestamp(field.type):
            letter[field.name] = dt.datetime.fromisoformat(text)
        else:
            letter[field.name] = int(text)
    return letter
