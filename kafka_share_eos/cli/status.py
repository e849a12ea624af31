"""``kafka-share-eos status``: a pipeline's journal, acknowledged batches and dead letters."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated

import typer
from rich.console import Console

from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.options import StorageOpt, storage_options
from kafka_share_eos.cli.tables import Column, fitted
from kafka_share_eos.deadletter import count_dead_letters
from kafka_share_eos.deadletter.sql import DEFAULT_TABLE
from kafka_share_eos.journal import JournalStatus
from kafka_share_eos.pipeline_status import journal_status


def _count(n: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith(("s", "sh", "ch", "x")) else "s")
    return f"{n} {noun if n == 1 else plural}"


def _sequences(first: int, last: int) -> str:
    return f"journal sequence {last}" if first == last else f"journal sequences {first}-{last}"


def render(status: JournalStatus, console: Console) -> None:
    """Print ``status`` as tables for people, each whole at the console's width.

    The journal knows its own sequences, not Spark's batch ids: a batch is named by the
    journal sequences it spans (its last is Spark's end offset of the batch)."""
    totals = status.totals
    width = console.width
    console.print(
        f"journal {status.location}: {_count(len(status.segments), 'segment')} journaled, "
        f"{_count(totals.batches, 'batch')} acknowledged, "
        f"{_count(len(status.pending), 'segment')} pending"
    )
    if status.segments:
        console.print(fitted(
            (Column("journal sequence", "right"), Column("rows", "right"), Column("state")),
            [[str(s.seq), str(s.rows), "settled" if s.settled else "pending"]
             for s in status.segments], width, title="journal segments"))
    rows = [
        ["records polled", str(totals.records)],
        ["redelivered (deliveryCount > 1)", str(totals.redelivered)],
        ["acknowledged", str(totals.acknowledged)],
        ["acknowledgement failures", str(totals.ack_failures)],
        ["max lock budget used", f"{totals.max_lock_budget_used:.1%}"],
    ]
    if status.batches:
        last = status.batches[-1]
        rows.append(["last settled batch", f"{_sequences(last.first_seq, last.seq)} "
                     f"({last.ack_policy}, settled {last.settled_at})"])
    if status.dead_letters is not None:
        rows.append(["dead letters", str(status.dead_letters)])
    console.print(fitted((Column("metric", wrap=True), Column("value", wrap=True)), rows, width,
                         title=f"batch metrics ({_count(totals.batches, 'batch')} kept)"))
    if status.batches:
        console.print(fitted(
            (Column("consumer slot", "right"), Column("records", "right")),
            [[str(entry["slot"]), str(entry["records"])] for entry in status.consumers],
            width, title="records per consumer"))
        console.print(fitted(
            (Column("member"), Column("records", "right")),
            [[member, str(records)] for member, records in status.members.items()],
            width, title="records per share-group member"))


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
