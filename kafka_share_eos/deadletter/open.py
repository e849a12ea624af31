"""From a location string to the matching dead-letter sink, and to the count of its letters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.errors import ConfigurationError

_SQL_SCHEMES = ("postgresql", "postgres", "sqlite")


def open_dead_letters(
    uri: str,
    *,
    table: str | None = None,
    config: Mapping[str, Any] | None = None,
    create: bool = True,
) -> DeadLetterSink:
    """The dead-letter sink at ``uri``.

    - ``postgresql+psycopg://...`` or ``sqlite:///...``: :class:`SqlDeadLetters` (``table``
      names the table; a default otherwise);
    - ``kafka://host:port[,host:port]/topic``: :class:`KafkaDeadLetters` (``config`` adds
      producer/consumer settings, e.g. security);
    - anything else (a path, ``file://``, ``s3://``, ...): :class:`DeltaDeadLetters`.

    Without ``create``, nothing is created: a SQL table (or SQLite file) must exist already.

    Raises:
        ConfigurationError: a ``kafka://`` URI without a host or a topic.
        LocationNotFoundError: without ``create``, the SQL table does not exist.
        MissingExtraError: the sink's library is not installed (SQLAlchemy, psycopg or
            deltalake).
    """
    scheme = urlsplit(uri).scheme.split("+")[0].lower()
    if scheme in _SQL_SCHEMES:
        from kafka_share_eos.deadletter.sql import DEFAULT_TABLE, SqlDeadLetters

        return SqlDeadLetters(uri, table or DEFAULT_TABLE, create_table=create)
    if scheme == "kafka":
        from kafka_share_eos.deadletter.kafka import KafkaDeadLetters

        parts = urlsplit(uri)
        topic = parts.path.strip("/")
        if not parts.netloc or not topic:
            raise ConfigurationError(
                f"a Kafka dead-letter URI is kafka://host:port/topic, got {uri!r}"
            )
        return KafkaDeadLetters(topic, {**(config or {}), "bootstrap.servers": parts.netloc})
    from kafka_share_eos.deadletter.delta import DeltaDeadLetters

    return DeltaDeadLetters(uri)


def count_dead_letters(uri: str, table: str | None = None) -> int:
    """The records in the dead-letter sink at ``uri`` (SQL table ``table``); creates nothing.

    Raises:
        LocationNotFoundError: no such SQL table, or no SQLite file.
    """
    sink = open_dead_letters(uri, table=table, create=False)
    try:
        return sink.count()
    finally:
        sink.close()
