"""``kafka-share-eos bench``: every benchmark, one table of ratios against their targets."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console, RenderableType
from rich.live import Live
from rich.spinner import Spinner

from kafka_share_eos._extras import CHARTS
from kafka_share_eos.cli import preflight
from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.tables import Column, fitted
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.agreement import agreements, saved_ratios, summary
from kafka_share_eos.proving_ground.bench.chart import chart_svg
from kafka_share_eos.proving_ground.bench.ratios import Ratio
from kafka_share_eos.proving_ground.bench.suite import (
    BENCHMARKS,
    FULL,
    QUICK,
    SuiteResult,
    run_suite,
    run_title,
    unknown_benchmarks,
)
from kafka_share_eos.proving_ground.console.logfile import StderrToFile
from kafka_share_eos.proving_ground.signals import Terminated, exit_status, sigterm_unwinds


def _verdict(ratio: Ratio) -> str:
    if ratio.meets is None:
        return ""
    return "[green]yes[/]" if ratio.meets else "[red]no[/]"


def _title(result: SuiteResult) -> str:
    return run_title(result.sizes == QUICK)


def _caption(result: SuiteResult) -> str:
    """The machine, the versions and the sizes the ratios were measured with."""
    machine = result.machine
    return (
        f"{machine['cpus']} CPUs ({machine['cpu model']}), {machine['memory']}, "
        f"{machine['os']}; Python {machine['python']}, Spark {machine['spark']}, "
        f"librdkafka {machine['librdkafka']}, deltalake {machine['deltalake']}, "
        f"PostgreSQL {machine['postgres']}. Sizes: {result.sizes.summary()}."
    )


BENCH_COLUMNS = (
    Column("benchmark"), Column("comparison", wrap=True), Column("measured", "right"),
    Column("target", "right"), Column("met", "center"), Column("detail", wrap=True),
)


def render(result: SuiteResult, width: int | None = None) -> RenderableType:
    """The ratios as one table, captioned with the machine, versions and sizes; one block per
    row when the table does not fit in ``width`` (any width when None)."""
    rows = [[ratio.benchmark, ratio.name, ratio.value_text, ratio.target_text,
             _verdict(ratio), ratio.detail] for ratio in result.ratios]
    rows += [[name, "[red]failed[/]", "", "", "[red]no[/]", error]
             for name, error in result.failures.items()]
    rows += [[name, row, "not run", "", "", reason] for name, row, reason in _not_run(result)]
    return fitted(BENCH_COLUMNS, rows, width or 10_000, keys=2, title=_title(result),
                  caption=_caption(result))


def _not_run(result: SuiteResult) -> list[tuple[str, str, str]]:
    """(benchmark, row, why) of every row a benchmark could not measure here."""
    return [(name, row, reason) for name, rows in result.not_run.items()
            for row, reason in rows.items()]


def markdown(result: SuiteResult, chart: str | None = None) -> str:
    """The same table in Markdown, for docs/results/, under the ``chart`` image if given."""
    lines = [
        f"# {_title(result)}",
        "",
        _caption(result),
        "",
        *([f"![Every ratio against its target]({chart})", ""] if chart else []),
        "| benchmark | comparison | measured | target | met | detail |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    rows = [
        (ratio.benchmark, ratio.name, ratio.value_text, ratio.target_text,
         "" if ratio.meets is None else ("yes" if ratio.meets else "**no**"), ratio.detail)
        for ratio in result.ratios
    ]
    rows += [(name, "failed", "", "", "**no**", error)
             for name, error in result.failures.items()]
    rows += [(name, row, "not run", "", "", reason) for name, row, reason in _not_run(result)]
    lines += ["| " + " | ".join(map(_markdown_cell, row)) + " |" for row in rows]
    durations = ", ".join(f"{name} {seconds:.0f} s" for name, seconds in result.seconds.items())
    lines += ["", f"Duration: {durations}.", ""]
    return "\n".join(lines)


def _markdown_cell(text: str) -> str:
    """``text`` as one table cell: a multi-line error on one line, its pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def save_results(result: SuiteResult, save: Path) -> None:
    """Write ``result`` to SAVE.json, its table to SAVE.md and its chart to SAVE.svg."""
    save.parent.mkdir(parents=True, exist_ok=True)
    save.with_suffix(".json").write_text(
        json.dumps(result.to_json(), indent=2, default=str) + "\n", encoding="utf-8"
    )
    chart = save.with_suffix(".svg")
    chart.write_text(chart_svg(result.ratios, _title(result)), encoding="utf-8")
    save.with_suffix(".md").write_text(markdown(result, chart.name), encoding="utf-8")


def _report(
    result: SuiteResult, save: Path | None, as_json: bool, reference: list[Ratio] | None
) -> None:
    """Save, print, and compare with the ``--against`` run when given (on stderr with --json,
    so stdout stays one JSON document)."""
    if save is not None:
        save_results(result, save)
    if as_json:
        print(json.dumps(result.to_json(), indent=2, default=str))
    else:
        console = Console()
        console.print(render(result, console.width))
    if reference is not None:
        Console(stderr=as_json, highlight=False).print(
            summary(agreements(result.ratios, reference)), soft_wrap=True
        )


def _saved_run(path: Path) -> list[Ratio]:
    """The rows of the run saved at ``path``; a bad ``--against`` before any benchmark runs."""
    with given("--against", str(path)):
        try:
            return saved_ratios(path)
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigurationError(
                f"not a run saved by `bench --save` ({type(exc).__name__}: {exc})"
            ) from exc


def _checked(
    only: list[str] | None, against: Path | None, save: Path | None, postgres_url: str | None
) -> list[Ratio] | None:
    """Check the options before any benchmark runs; the rows of the ``--against`` run."""
    preflight.database("--postgres-url", postgres_url)
    unknown = unknown_benchmarks(only or ())
    if unknown:
        raise typer.BadParameter(unknown, param_hint="--only")
    if save is not None:
        # --save draws a chart: a missing matplotlib is said now, not after the run.
        CHARTS.require("bench --save")
    return None if against is None else _saved_run(against)


def bench(
    quick: Annotated[bool, typer.Option(
        "--quick", help="Smaller sizes and one round each (a few minutes): indicative ratios.",
    )] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the results as JSON instead of a table.")
    ] = False,
    postgres_url: Annotated[
        str | None,
        typer.Option(
            metavar="URL",
            help="SQLAlchemy URL of a superuser on an existing PostgreSQL server; each benchmark "
            "creates and drops its own database there (default: a throwaway local server)."
        ),
    ] = None,
    save: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="Also write the results to PATH.json, the table to PATH.md and a chart of "
            "every ratio against its target to PATH.svg (e.g. docs/results/benchmarks)."
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(metavar="NAME",
                     help=f"Run only this benchmark; repeatable: {', '.join(BENCHMARKS)}."),
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="A run saved with --save (its .json, e.g. docs/results/benchmarks.json): "
            "after the table, say how far each row both runs have lands from that run's, and "
            "which are more than 20 % apart.",
        ),
    ] = None,
) -> None:
    """Run every benchmark and print one table of ratios with their targets.

    Each ratio compares two measurements taken side by side in this run.

    Exits non-zero if a benchmark failed to run; a missed target is only reported. Stopped by
    Ctrl-C or SIGTERM, it stops the PostgreSQL server, Spark and the brokers it started, says so
    in one line and exits with 130 or 143. Spark's, the JVMs' and the clients' logs go to a
    file, named on the last line.
    """
    reference = _checked(only, against, save, postgres_url)
    log = Path(tempfile.mkdtemp(prefix="kafka-share-eos-bench-")) / "bench.log"
    # The terminal, kept before descriptor 2 goes to the log for the run.
    with os.fdopen(os.dup(2), "w", buffering=1) as terminal:
        progress = Console(file=terminal, highlight=False)
        spinner = Spinner("dots", "benchmarks")
        try:
            # Python's stderr stays on the log: a Live redirecting it would show warnings.
            with StderrToFile(log, "kafka-share-eos bench"), sigterm_unwinds(), Live(
                spinner, console=progress, transient=True, redirect_stderr=False,
                redirect_stdout=False,
            ):
                result = run_suite(
                    QUICK if quick else FULL,
                    postgres_url,
                    on_start=lambda name: spinner.update(text=f"running the {name} benchmark"),
                    only=only or (),
                )
        except KeyboardInterrupt as stop:
            how = "stopped by SIGTERM" if isinstance(stop, Terminated) else "interrupted"
            progress.print(f"bench {how}: the servers, Spark and brokers it started are "
                           f"stopped; logs: {log}", soft_wrap=True)
            raise typer.Exit(exit_status(stop)) from None
        progress.print(f"[dim]Spark's, the JVMs' and the clients' logs: {log}[/]",
                       soft_wrap=True)
    _report(result, save, as_json, reference)
    if result.failures:
        raise typer.Exit(1)
