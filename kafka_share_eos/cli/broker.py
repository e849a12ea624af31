"""``kafka-share-eos broker``: run a share-group broker in the foreground, the embedded one or,
with ``--kafka``, Apache Kafka itself."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kafka_share_eos.cli import preflight
from kafka_share_eos.proving_ground.broker import EmbeddedBroker, TopicSpec
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    ISOLATION_LEVEL,
)

# Kafka's int configs (lock duration, delivery limit, session and heartbeat intervals).
KAFKA_INT_MAX = 2**31 - 1


def broker(
    topic: Annotated[
        list[TopicSpec],
        typer.Option(
            "--topic",
            "-t",
            parser=TopicSpec.parse,
            metavar="NAME[:PARTITIONS]",
            help="Topic to create and its partitions (1 when not given); repeatable.",
        ),
    ] = [],  # noqa: B006 - typer reads the default, it is never mutated
    lock_ms: Annotated[
        int | None,
        typer.Option(min=1, max=KAFKA_INT_MAX, metavar="MS",
                     help="Record lock duration in milliseconds."),
    ] = None,
    max_deliveries: Annotated[
        int | None,
        typer.Option(min=1, max=KAFKA_INT_MAX, metavar="N",
                     help="Deliveries before a record is archived."),
    ] = None,
    session_timeout_ms: Annotated[
        int | None,
        typer.Option(min=1, max=KAFKA_INT_MAX, metavar="MS",
                     help="Share-group session timeout in milliseconds."),
    ] = None,
    heartbeat_ms: Annotated[
        int | None,
        typer.Option(min=1, max=KAFKA_INT_MAX, metavar="MS",
                     help="Share-group heartbeat interval in milliseconds."),
    ] = None,
    offset_reset: Annotated[
        str | None,
        typer.Option(metavar="earliest|latest", help="Where new share groups start. The embedded "
                     "broker: every group, earliest when not given. With --kafka: the groups "
                     "named with --group, earliest when not given; Kafka has no broker-wide "
                     "setting, so any other group starts at 'latest'."),
    ] = None,
    addr_file: Annotated[Path | None, typer.Option(
        metavar="PATH", help="Also write the bootstrap address to this file.")] = None,
    kafka: Annotated[
        bool, typer.Option("--kafka", help="Run Apache Kafka (fetched once with Maven) instead "
                           "of the embedded broker.")
    ] = False,
    brokers: Annotated[
        int, typer.Option(min=1, metavar="N",
                          help="With --kafka: KRaft nodes, each a broker and controller.")
    ] = 1,
    group: Annotated[
        list[str],
        typer.Option("--group", "-g", metavar="NAME", help="With --kafka: share group to "
                     "configure (where it starts, read_committed); repeatable. Kafka's groups "
                     "start at 'latest' unless configured."),
    ] = [],  # noqa: B006 - typer reads the default, it is never mutated
) -> None:
    """Run a share-group broker until SIGINT or SIGTERM; its bootstrap servers are the first
    line printed."""
    _refuse_options_that_cannot_apply(offset_reset, kafka, brokers, group, addr_file)
    console = Console(stderr=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    settings = _Settings(lock_ms, max_deliveries, session_timeout_ms, heartbeat_ms,
                         offset_reset or "earliest")
    running = (_kafka(topic, brokers, group, settings, console) if kafka
               else _embedded(topic, settings))
    with running as (name, address):
        if addr_file is not None:
            tmp = addr_file.with_name(addr_file.name + ".tmp")
            tmp.write_text(address + "\n")
            tmp.replace(addr_file)
        print(address, flush=True)
        topics = ", ".join(f"{t.name}:{t.partitions}" for t in topic) or "none"
        console.print(f"[green]{name}[/] at [bold]{address}[/] (topics: {topics}); Ctrl-C to stop")
        if kafka and not group:
            console.print("share groups start at Kafka's 'latest': name a group with --group "
                          "to have it start at 'earliest' and read committed records")
        stop.wait()
    console.print(f"{name} stopped")


def _refuse_options_that_cannot_apply(
    offset_reset: str | None, kafka: bool, brokers: int, group: list[str], addr_file: Path | None
) -> None:
    preflight.new_file("--addr-file", addr_file)
    if offset_reset not in (None, "earliest", "latest"):
        raise typer.BadParameter("must be 'earliest' or 'latest'", param_hint="--offset-reset")
    if kafka and offset_reset is not None and not group:
        raise typer.BadParameter(
            "with --kafka it applies only to the share groups named with --group (Kafka has no "
            "broker-wide setting for where a new share group starts): name them",
            param_hint="--offset-reset")
    if not kafka and (brokers != 1 or group):
        raise typer.BadParameter("needs --kafka", param_hint="--brokers" if brokers != 1
                                 else "--group")


class _Settings:
    def __init__(self, lock_ms: int | None, max_deliveries: int | None,
                 session_timeout_ms: int | None, heartbeat_ms: int | None,
                 offset_reset: str) -> None:
        self.lock_ms = lock_ms
        self.max_deliveries = max_deliveries
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_ms = heartbeat_ms
        self.offset_reset = offset_reset


@contextlib.contextmanager
def _embedded(topics: list[TopicSpec], settings: _Settings) -> Iterator[tuple[str, str]]:
    with EmbeddedBroker(
        topics,
        record_lock_duration_ms=settings.lock_ms,
        max_delivery_attempts=settings.max_deliveries,
        session_timeout_ms=settings.session_timeout_ms,
        heartbeat_interval_ms=settings.heartbeat_ms,
        auto_offset_reset="earliest" if settings.offset_reset == "earliest" else "latest",
    ) as running:
        yield "embedded broker", running.bootstrap_servers


# The CLI's knobs are broker-wide defaults of every share group, as on the embedded broker.
_KAFKA_DEFAULTS = {
    "lock_ms": "group.share.record.lock.duration.ms",
    "max_deliveries": "group.share.delivery.count.limit",
    "session_timeout_ms": "group.share.session.timeout.ms",
    "heartbeat_ms": "group.share.heartbeat.interval.ms",
}


@contextlib.contextmanager
def _kafka(
    topics: list[TopicSpec], brokers: int, groups: list[str], settings: _Settings,
    console: Console,
) -> Iterator[tuple[str, str]]:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster

    config = {broker_key: str(getattr(settings, name))
              for name, broker_key in _KAFKA_DEFAULTS.items()
              if getattr(settings, name) is not None}
    console.print(f"starting Apache Kafka ({brokers} node{'s' if brokers > 1 else ''})...")
    with KafkaCluster(brokers, topics=topics, broker_config=config) as cluster:
        for name in groups:
            cluster.set_group_config(name, {
                AUTO_OFFSET_RESET: settings.offset_reset,
                ISOLATION_LEVEL: "read_committed",
            })
        yield f"Apache Kafka {cluster.version}", cluster.bootstrap_servers
