"""``kafka-share-eos broker``: run the embedded share-group broker in the foreground."""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kafka_share_eos.sharegroup import EmbeddedBroker, TopicSpec


def broker(
    topic: Annotated[
        list[TopicSpec],
        typer.Option(
            "--topic",
            "-t",
            parser=TopicSpec.parse,
            metavar="NAME[:PARTITIONS]",
            help="Topic to create, NAME[:PARTITIONS]; repeatable.",
        ),
    ] = [],  # noqa: B006 - typer reads the default, it is never mutated
    lock_ms: Annotated[
        int | None, typer.Option(min=1, help="Record lock duration in milliseconds.")
    ] = None,
    max_deliveries: Annotated[
        int | None, typer.Option(min=1, help="Deliveries before a record is archived.")
    ] = None,
    session_timeout_ms: Annotated[
        int | None, typer.Option(min=1, help="Share-group session timeout in milliseconds.")
    ] = None,
    heartbeat_ms: Annotated[
        int | None, typer.Option(min=1, help="Share-group heartbeat interval in milliseconds.")
    ] = None,
    offset_reset: Annotated[
        str, typer.Option(help="Where new share groups start: earliest or latest.")
    ] = "earliest",
    addr_file: Annotated[
        Path | None, typer.Option(help="Also write the bootstrap address to this file.")
    ] = None,
) -> None:
    """Run an embedded share-group broker until SIGINT or SIGTERM."""
    if offset_reset not in ("earliest", "latest"):
        raise typer.BadParameter("must be 'earliest' or 'latest'", param_hint="--offset-reset")
    console = Console(stderr=True)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    with EmbeddedBroker(
        topic,
        record_lock_duration_ms=lock_ms,
        max_delivery_attempts=max_deliveries,
        session_timeout_ms=session_timeout_ms,
        heartbeat_interval_ms=heartbeat_ms,
        auto_offset_reset="earliest" if offset_reset == "earliest" else "latest",
    ) as running:
        address = running.bootstrap_servers
        if addr_file is not None:
            tmp = addr_file.with_name(addr_file.name + ".tmp")
            tmp.write_text(address + "\n")
            tmp.replace(addr_file)
        print(address, flush=True)
        topics = ", ".join(f"{t.name}:{t.partitions}" for t in topic) or "none"
        console.print(
            f"[green]embedded broker[/] at [bold]{address}[/] (topics: {topics}); Ctrl-C to stop"
        )
        stop.wait()
    console.print("embedded broker stopped")
