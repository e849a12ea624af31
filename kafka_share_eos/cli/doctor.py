"""``kafka-share-eos doctor``: recognise and repair a Spark checkpoint a kill left half-written."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.options import StorageOpt, storage_options
from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.spark_checkpoint import diagnose, repair


def doctor(
    checkpoint: Annotated[
        str,
        typer.Option("--checkpoint", metavar="PATH", help="The query's checkpointLocation (a "
                     "path, an object store or a pyarrow.fs URI)."),
    ],
    fix: Annotated[
        bool,
        typer.Option("--fix", help="Remove the temporary files an interrupted first "
                     "offset-log write left (nothing else)."),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Check that Spark can restart a query from its checkpoint; explain and, with --fix,
    repair what a kill during its first batch left. Exits 1 when a problem remains."""
    options = storage_options(storage_option)
    with given("--checkpoint", checkpoint):
        try:
            report = repair(checkpoint, options) if fix else diagnose(checkpoint, options)
        except FileNotFoundError as exc:
            raise LocationNotFoundError(f"no checkpoint at {checkpoint!r}") from exc
    if as_json:
        print(json.dumps(report.to_dict()))
    else:
        state = (
            "healthy" if report.healthy
            else "cannot restart" if report.is_checkpoint else "not a Spark checkpoint"
        )
        print(f"checkpoint {checkpoint}: {state}")
        for path in report.removed:
            print(f"  removed {path}")
        for path in report.leftovers + report.unexpected:
            print(f"  found {path}")
        print(report.explanation())
    if not report.healthy:
        raise typer.Exit(1)
