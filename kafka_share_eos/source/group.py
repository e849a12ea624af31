"""The share group as the source needs it: reading committed records, with its real timings.

At the start of a query the runner describes the group's configs through the admin API
(:mod:`~kafka_share_eos.sharegroup.group_config`):

- ``share.auto.offset.reset`` takes the ``startingOffsets`` option on a group the brokers do not
  know yet, before the source's first consumer joins
  (:mod:`~kafka_share_eos.source.starting_offsets`).
- ``share.isolation.level`` must be ``read_committed``, or records of aborted transactions would
  reach the strategies as if they were data. A group that inherits Kafka's default
  (``read_uncommitted``) is switched to ``read_committed`` by the source; one whose own config
  says ``read_uncommitted``, or that the pipeline may not alter, makes the query fail with a
  :class:`ShareGroupNotReadCommittedError` naming the command that fixes it.
- ``share.record.lock.duration.ms`` and ``share.session.timeout.ms`` replace the
  ``lockDurationMs`` and ``sessionTimeoutMs`` options, so the lock budget and the drain's wait
  after a crash use what the brokers enforce (an option that disagrees is logged once).
- ``share.heartbeat.interval.ms`` and ``share.assignment.interval.ms`` say how long a new
  consumer may find nothing before it has partitions: an ``availableNow`` drain does not end
  before then.

Brokers that keep no group configs (the embedded broker) leave the options as they are.

When the stream is loaded, the group's ``share.delivery.count.limit`` becomes the metadata of
the ``deliveryCount`` column (:func:`delivery_count_limit`), so that the strategies' dead letters
take a record on its last delivery instead of letting Kafka archive it.
"""

from __future__ import annotations

import dataclasses
import logging

from confluent_kafka import KafkaException

from kafka_share_eos.errors import (
    ConfigurationError,
    GroupConfigError,
    ShareGroupNotReadCommittedError,
)
from kafka_share_eos.sharegroup.group_config import (
    ISOLATION_LEVEL,
    ShareGroupSettings,
    alter_share_group,
    config_command,
    describe_share_group,
)
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.source.starting_offsets import apply_starting_offsets

log = logging.getLogger("kafka_share_eos.source")

READ_COMMITTED = "read_committed"


def _fix_command(options: SourceOptions) -> str:
    return config_command(options.consumer_config, options.group_id, ISOLATION_LEVEL,
                          READ_COMMITTED)


def resolve_group(options: SourceOptions) -> SourceOptions:
    """``options`` with the share group's lock duration and session timeout, once the group is
    sure to read committed records only and a new group starts where ``startingOffsets`` says
    (see the module docstring).

    Raises:
        ShareGroupNotReadCommittedError: the group reads uncommitted records and the source
            may not switch it.
        GroupConfigError: the brokers refused to describe the group's configs, or to set where
            a new group starts.
    """
    settings = apply_starting_offsets(
        options, describe_share_group(options.consumer_config, options.group_id)
    )
    if settings is None:
        return options
    if not settings.reads_committed:
        settings = _switch_to_read_committed(options, settings)
    for option, given, real in (
        ("lockDurationMs", options.lock_duration_ms, settings.record_lock_duration_ms),
        ("sessionTimeoutMs", options.session_timeout_ms, settings.session_timeout_ms),
    ):
        if option in options.given and given != real:
            log.warning("kafka-share source: option %s is %d but share group %r uses %d; "
                        "using %d", option, given, options.group_id, real, real)
    return dataclasses.replace(
        options,
        lock_duration_ms=settings.record_lock_duration_ms,
        session_timeout_ms=settings.session_timeout_ms,
        delivery_count_limit=settings.delivery_count_limit,
        join_ms=settings.join_ms,
    )


def delivery_count_limit(options: SourceOptions) -> int | None:
    """The share group's delivery limit, or None where the brokers keep no group configs or
    cannot be asked now (the query's run then fails with the reason when it starts)."""
    try:
        settings = describe_share_group(options.consumer_config, options.group_id)
    except (GroupConfigError, KafkaException) as exc:
        log.warning("kafka-share source: the delivery limit of share group %r is unknown (%s)",
                    options.group_id, exc)
        return None
    return None if settings is None else settings.delivery_count_limit


def _switch_to_read_committed(
    options: SourceOptions, settings: ShareGroupSettings
) -> ShareGroupSettings:
    group = options.group_id
    if settings.isolation_level_is_own:
        raise ShareGroupNotReadCommittedError(
            f"share group {group!r} is configured with {ISOLATION_LEVEL}="
            f"{settings.isolation_level}: records of aborted transactions would reach the "
            f"pipeline. Set it to {READ_COMMITTED}: {_fix_command(options)}"
        )
    try:
        switched = alter_share_group(options.consumer_config, group,
                                     {ISOLATION_LEVEL: READ_COMMITTED})
    except (ConfigurationError, GroupConfigError) as exc:
        raise ShareGroupNotReadCommittedError(
            f"share group {group!r} reads uncommitted records (Kafka's default "
            f"{ISOLATION_LEVEL}={settings.isolation_level}) and the source could not switch it "
            f"to {READ_COMMITTED} ({exc}). Set it, or grant ALTER_CONFIGS on the group: "
            f"{_fix_command(options)}"
        ) from exc
    log.info("kafka-share source: share group %r now reads committed records only "
             "(%s=%s)", group, ISOLATION_LEVEL, READ_COMMITTED)
    return switched
