"""``kafka-share-eos soak``: one pipeline for a set time under a steady producer and a fault of
every family every few minutes, then drained and counted."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kafka_share_eos.cli import preflight
from kafka_share_eos.proving_ground.soak.schedule import SoakOptions
from kafka_share_eos.proving_ground.soak.strikes import STRIKES, check_strikes

_DEFAULTS = SoakOptions()

MinutesOpt = Annotated[float, typer.Option(
    "--minutes", min=0.5, help="How long the producer runs, warm-up included.")]
RateOpt = Annotated[float, typer.Option(
    "--rate", min=0.1, help="Records a second the producer sends after the backlog.")]
BacklogOpt = Annotated[int, typer.Option(
    "--backlog", min=0, help="Records produced before the pipeline starts.")]
FaultEveryOpt = Annotated[float, typer.Option(
    "--fault-every", min=1.0, help="Seconds between faults on average.")]
FaultSecondsOpt = Annotated[float, typer.Option(
    "--fault-seconds", min=0.0,
    help="How long a lasting fault (a Kafka node down, the store blackholed or throttled) "
         "stays.")]
WarmUpOpt = Annotated[int, typer.Option(
    "--warm-up", min=1,
    help="Micro-batches before the levels the end is compared with are taken and the faults "
         "begin.")]
SoakFaultsOpt = Annotated[list[str], typer.Option(
    "--faults", help=f"Fault kinds to strike, repeatable or comma-separated (default all: "
                     f"{', '.join(STRIKES)}).")]
SaveOpt = Annotated[Path | None, typer.Option(
    "--save", help="Write the result to this JSON file and its chart beside it (.svg).")]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed of the fault order and gaps.")]
WorkdirOpt = Annotated[Path | None, typer.Option(
    "--workdir", help="Keep the pipeline's directory here (default: a temporary directory, "
                      "removed at the end).")]


def soak(
    minutes: MinutesOpt = _DEFAULTS.minutes,
    rate: RateOpt = _DEFAULTS.rate,
    backlog: BacklogOpt = _DEFAULTS.backlog,
    fault_every: FaultEveryOpt = _DEFAULTS.fault_every,
    fault_seconds: FaultSecondsOpt = _DEFAULTS.fault_seconds,
    warm_up: WarmUpOpt = _DEFAULTS.warm_up_batches,
    faults: SoakFaultsOpt = [],  # noqa: B006 - typer reads the default, never mutated
    seed: SeedOpt = _DEFAULTS.seed,
    save: SaveOpt = None,
    workdir: WorkdirOpt = None,
) -> None:
    """Run one pipeline (the dedup store into Delta, consumers=4) on a three-node Apache Kafka
    with every durable path on the S3 server, a steady producer and a random fault every few
    minutes from every family, until the time is up; then drain and count.

    Prints one line per fault. Exits 1, naming each failed check, unless no record was
    duplicated or lost, resident memory at the end is at most 1.1 x that after the warm-up,
    journal files and ledger rows at most 1.2 x theirs, the journal's batch metrics at most the
    1000 it keeps, and every fault kind struck.
    """
    from kafka_share_eos.proving_ground.soak.campaign import run_soak

    kinds = tuple(name.strip() for value in faults for name in value.split(",") if name.strip())
    try:
        check_strikes(list(kinds))
    except ValueError as error:
        raise typer.BadParameter(str(error), param_hint="--faults") from error
    preflight.directory("--workdir", workdir)
    options = SoakOptions(minutes=minutes, rate=rate, backlog=backlog, fault_every=fault_every,
                          fault_seconds=fault_seconds, warm_up_batches=warm_up,
                          faults=kinds or _DEFAULTS.faults, seed=seed)
    # One line per fault, however long: a log or a test reads them line by line.
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    with tempfile.TemporaryDirectory(prefix="kse-soak-") as scratch:
        result = run_soak(options, workdir or Path(scratch), console.print)
    if save is not None:
        from kafka_share_eos.proving_ground.soak.timeline import redraw

        result.save(save)
        redraw(save)
    summary = (f"soak: {result.minutes:g} min, {result.records} records, "
               f"{sum(result.faults.values())} faults, {result.duplicates} duplicates, "
               f"{result.lost} lost")
    if result.passed:
        console.print(summary)
        return
    console.print(f"{summary}; failed:")
    for check, why in result.checks.items():
        console.print(f"  {check}: {why}")
    raise typer.Exit(1)
