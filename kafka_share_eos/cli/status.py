"""``kafka-share-eos status``: a pipeline's journal, acknowledged batches and dead letters."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.options import StorageOpt, storage_options
from kafka_share_eos.deadletter import count_dead_letters
from kafka_share_eos.deadletter.sql import DEFAULT_TABLE
from kafka_share_eos.journal import JournalStatus
from kafka_share_eos.pipeline_status import journal_status


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")
    return f"{n} {noun if n == 1 else plural}"


def render(status: JournalStatus, console: Console) -> None:
    """Print ``status`` as tables for people."""
    totals = status.totals
    console.print(
        f"journal {status.location}: {_count(len(status.segments), 'segment')} journaled, "
        f"{_count(totals.batches, 'batch')} acknowledged, "
        f"{_count(len(status.pending), 'segment')} pending"
    )
    if status.segments:
        segments = Table("segment", "rows", "state", title="journal segments")
        for s in status.segments:
            segments.add_row(str(s.seq), str(s.rows), "settled" if s.settled else "pending")
        console.print(segments)
    summary = Table("metric", "value", title=f"batch metrics ({totals.batches} batches kept)")
    summary.add_row("records polled", str(totals.records))
    summary.add_row("redelivered (deliveryCount > 1)", str(totals.redelivered))
    summary.add_row("acknowledged", str(totals.acknowledged))
    summary.add_row("acknowledgement failures", str(totals.ack_failures))
    summary.add_row("max lock budget used", f"{totals.max_lock_budget_used:.1%}")
    if status.batches:
        last = status.batches[-1]
        summary.add_row("last batch", f"{last.seq} ({last.ack_policy}, settled {last.settled_at})")
    if status.dead_letters is not None:
        summary.add_row("dead letters", str(status.dead_letters))
    console.print(summary)
    if status.batches:
        consumers = Table("consumer slot", "records", title="records per consumer")
        for entry in status.consumers:
            consumers.add_row(str(entry["slot"]), str(entry["records"]))
        console.print(consumers)
        members = Table("member", "records", title="records per share-group member")
        for member, records in status.members.items():
            members.add_row(member, str(records))
        console.print(members)


def status(
    journal: Annotated[
        str,
        typer.Option("--journal", metavar="PATH", help="The stream's journalPath (a path, an "
                     "object store or a pyarrow.fs URI)."),
    ],
    dead_letters: Annotated[
        str | None,
        typer.Option("--dead-letters", metavar="URL", help="Count the records in this "
                     "dead-letter sink (a Postgres/SQLite URL, kafka://host:port/topic, or a "
                     "Delta table); read only: nothing is created."),
    ] = None,
    dead_letter_table: Annotated[
        str | None,
        typer.Option("--dead-letter-table", metavar="TABLE", help="The dead-letter table in "
                     f"the SQL database of --dead-letters (default {DEFAULT_TABLE})."),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Show batches journaled, acknowledged and pending, batch-metric totals and dead letters."""
    options = storage_options(storage_option)
    with given("--journal", journal):
        result = journal_status(journal, storage_options=options)
    if dead_letters is not None:
        with given("--dead-letters", dead_letters):
            counted = count_dead_letters(dead_letters, dead_letter_table)
        result = dataclasses.replace(result, dead_letters=counted)
    if as_json:
        print(json.dumps(result.to_dict()))
    else:
        render(result, Console())
