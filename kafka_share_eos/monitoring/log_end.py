"""The partitions' log-end offsets, read with librdkafka's admin client for the backlog figure.

A share group keeps no committed offset a client can read (its lag needs the admin call
``DescribeShareGroupOffsets``, which confluent-kafka lacks: :mod:`share_lag`), but every
partition's log-end offset is one ``ListOffsets`` request away, which librdkafka sends
(``AdminClient.list_offsets`` with ``OffsetSpec.latest()``). Set against the highest offset this
query has journaled from each partition, it gives how many records lie beyond what the query
has reached. A scrape never waits on the brokers: it gets the last offsets read, and starts a
reading in the background when those are older than ``every_s`` and none is under way.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from kafka_share_eos.monitoring.background import BackgroundReading
from kafka_share_eos.sharegroup.group_config import admin_config

log = logging.getLogger("kafka_share_eos.monitoring")

REQUEST_TIMEOUT_S = 10.0

# One admin client per cluster settings, kept for the process's life: on the embedded broker a
# client that disconnects drops every share session of the broker, its consumers' included.
_clients: dict[tuple[tuple[str, str], ...], Any] = {}
_clients_lock = threading.Lock()


def _admin(settings: Mapping[str, Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    key = tuple(sorted((str(k), str(v)) for k, v in settings.items()))
    with _clients_lock:
        if key not in _clients:
            _clients[key] = AdminClient(dict(settings))
        return _clients[key]


def read_log_ends(client_config: Mapping[str, Any], topics: Sequence[str],
                  timeout_s: float = REQUEST_TIMEOUT_S) -> dict[tuple[str, int], int]:
    """The log-end offset of every partition of ``topics``, ``{(topic, partition): offset}``.

    Raises:
        confluent_kafka.KafkaException: the brokers did not answer within ``timeout_s``.
    """
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import OffsetSpec

    admin = _admin(admin_config(client_config))
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    wanted: dict[Any, Any] = {}
    for topic in topics:
        metadata = admin.list_topics(topic, timeout=timeout_s).topics[topic]
        if metadata.error is not None:
            log.debug("no metadata for topic %s: %s", topic, metadata.error)
            continue
        for partition in metadata.partitions:
            wanted[TopicPartition(topic, partition)] = latest
    if not wanted:
        return {}
    answers = admin.list_offsets(wanted, request_timeout=timeout_s)
    return {(tp.topic, tp.partition): future.result(timeout=timeout_s).offset
            for tp, future in answers.items()}


class LogEndOffsets(BackgroundReading[dict[tuple[str, int], int]]):
    """The log-end offsets of ``topics``, refreshed in the background.

    Args:
        client_config: the source's Kafka client settings (its connection and security ones
            are used).
        topics: the topics the query subscribes to.
        every_s: how old the last reading may be before a scrape starts another.
    """

    def __init__(self, client_config: Mapping[str, Any], topics: Sequence[str],
                 every_s: float = 10.0) -> None:
        super().__init__("kse-log-end-offsets", every_s, {})
        self._config = dict(client_config)
        self._topics = list(topics)

    @property
    def offsets(self) -> dict[tuple[str, int], int]:
        """The log-end offset per partition, ``{(topic, partition): offset}``, last read."""
        return self.value

    def read(self) -> dict[tuple[str, int], int] | None:
        """Ask the brokers once."""
        try:
            return read_log_ends(self._config, self._topics)
        except Exception as error:  # a broker out of reach: the next scrape tries again
            log.warning("could not read the log-end offsets of %s: %s",
                        ",".join(self._topics), error)
            return None
