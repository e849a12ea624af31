"""``kafka-share-eos bench``: every benchmark, one table of ratios against their targets."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kafka_share_eos.bench.ratios import TIMES, Ratio
from kafka_share_eos.bench.suite import FULL, QUICK, SuiteResult, run_suite


def _with_unit(number: str, unit: str) -> str:
    return f"{number}{unit}" if unit == TIMES else f"{number} {unit}"


def _target(ratio: Ratio) -> str:
    return "" if ratio.target is None else _with_unit(str(ratio.target), ratio.unit)


def _verdict(ratio: Ratio) -> str:
    if ratio.meets is None:
        return ""
    return "[green]yes[/]" if ratio.meets else "[red]no[/]"


def render(result: SuiteResult) -> Table:
    """The ratios as one table, captioned with the machine they were measured on."""
    machine = result.machine
    quick = " (--quick: sizes too small for the targets)" if result.sizes == QUICK else ""
    table = Table(
        title=f"kafka-share-eos benchmarks{quick}",
        caption=(
            f"{machine['cpus']} CPUs ({machine['cpu model']}), {machine['memory']}, "
            f"{machine['os']}; Python {machine['python']}, Spark {machine['spark']}, "
            f"librdkafka {machine['librdkafka']}, deltalake {machine['deltalake']}, "
            f"PostgreSQL {machine['postgres']}"
        ),
        caption_justify="left",
    )
    for column, justify in (
        ("benchmark", "left"),
        ("comparison", "left"),
        ("measured", "right"),
        ("target", "right"),
        ("met", "center"),
        ("detail", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for ratio in result.ratios:
        table.add_row(
            ratio.benchmark,
            ratio.name,
            _with_unit(f"{ratio.value:.2f}", ratio.unit),
            _target(ratio),
            _verdict(ratio),
            ratio.detail,
        )
    for name, error in result.failures.items():
        table.add_row(name, "[red]failed[/]", "", "", "[red]no[/]", error)
    return table


def bench(
    quick: Annotated[
        bool, typer.Option("--quick", help="Tiny sizes: checks every benchmark runs (~1 min).")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON instead of a table.")
    ] = False,
    postgres_url: Annotated[
        str | None,
        typer.Option(
            help="SQLAlchemy URL of a superuser on an existing PostgreSQL server; each benchmark "
            "creates and drops its own database there (default: a throwaway local server)."
        ),
    ] = None,
) -> None:
    """Run every benchmark and print one table of ratios with their targets.

    Each ratio compares two measurements taken side by side in this run.

    Exits non-zero if a benchmark failed to run; a missed target is only reported.
    """
    progress = Console(stderr=True)
    with progress.status("benchmarks") as status:
        result = run_suite(
            QUICK if quick else FULL,
            postgres_url,
            on_start=lambda name: status.update(f"running the {name} benchmark"),
        )
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        Console().print(render(result))
    if result.failures:
        raise typer.Exit(1)
