"""``kafka-share-eos verify``: crash pipelines at every dangerous moment and count the effects."""

from __future__ import annotations

import json
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

import typer
from rich.console import Console

from kafka_share_eos.cli import preflight
from kafka_share_eos.cli.verify_options import (
    AfterJournalOpt,
    BadRecordsOpt,
    BrokerOpt,
    ConsumersOpt,
    CrashesPerRunOpt,
    CrashPointsOpt,
    FaultsOnlyOpt,
    FaultsOpt,
    HandoffsOpt,
    JsonOpt,
    KeepOpt,
    ParallelOpt,
    PartitionsOpt,
    PerTriggerOpt,
    PipelinesOpt,
    PostgresUrlOpt,
    RandomKillsOpt,
    RecordsOpt,
    ResultsOpt,
    RunsOpt,
    SeedOpt,
    SessionDropsOpt,
    SlowSinkOpt,
    SparkConnectOpt,
    StorageOpt,
    StrategyOpt,
    WorkdirOpt,
)
from kafka_share_eos.cli.verify_table import render
from kafka_share_eos.proving_ground.verify.defaults import (
    BROKER,
    CONSUMERS,
    CRASHES,
    PARALLEL,
    PARTITIONS,
    PER_TRIGGER,
    PIPELINES,
    RECORDS,
    RUNS,
    SEED,
    STORAGE,
)
from kafka_share_eos.proving_ground.verify.known_targets import SAFE_TARGETS
from kafka_share_eos.proving_ground.verify.matrix import MatrixResult, run_matrix
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.spec import Mix, RunResult


def _names(values: list[str]) -> list[str]:
    """Repeated and comma-separated values, flattened."""
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def verify(
    strategy: StrategyOpt = [],  # noqa: B006 - typer reads the default, never mutated
    crash_points: CrashPointsOpt = [],  # noqa: B006 - typer reads the default, never mutated
    faults: FaultsOpt = [],  # noqa: B006 - typer reads the default, never mutated
    faults_only: FaultsOnlyOpt = False,
    records: RecordsOpt = RECORDS,
    runs: RunsOpt = RUNS,
    crashes_per_run: CrashesPerRunOpt = CRASHES,
    per_trigger: PerTriggerOpt = PER_TRIGGER,
    seed: SeedOpt = SEED,
    parallel: ParallelOpt = PARALLEL,
    random_kills: RandomKillsOpt = False,
    pipelines: PipelinesOpt = PIPELINES,
    handoffs: HandoffsOpt = False,
    session_drops: SessionDropsOpt = False,
    slow_sink: SlowSinkOpt = False,
    bad_records: BadRecordsOpt = False,
    after_journal: AfterJournalOpt = False,
    consumers: ConsumersOpt = CONSUMERS,
    partitions: PartitionsOpt = PARTITIONS,
    broker: BrokerOpt = BROKER,
    storage: StorageOpt = STORAGE,
    postgres_url: PostgresUrlOpt = None,
    workdir: WorkdirOpt = None,
    keep: KeepOpt = False,
    results: ResultsOpt = None,
    spark_connect: SparkConnectOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Prove exactly-once effects: crash pipelines at named points and random moments,
    restart them on the same checkpoint until drained, and count per record how many times
    its effect landed in the sinks.

    Exits 1 if any record was duplicated or lost, a run failed, or a crash point never fired.
    """
    options = MatrixOptions(
        targets=_names(strategy) or SAFE_TARGETS,
        points=() if faults_only else _names(crash_points) or None,
        faults=_names(faults),
        runs=runs,
        records=records,
        crashes=crashes_per_run,
        per_trigger=per_trigger,
        partitions=partitions,
        seed=seed,
        parallel=parallel,
        mix=Mix(pipelines=pipelines, session_drops=session_drops, slow_sink=slow_sink,
                bad_records=bad_records, random_kills=random_kills, after_journal=after_journal,
                consumers=consumers, handoffs=handoffs),
        postgres_url=postgres_url,
        workdir=workdir,
        keep=keep,
        results=results,
        broker=broker,  # type: ignore[arg-type]  # checked by options.check()
        storage=storage,  # type: ignore[arg-type]  # checked by options.check()
        spark_connect=spark_connect,
    )
    total = _run_count(options)
    preflight.database("--postgres-url", postgres_url)
    preflight.directory("--workdir", workdir)
    preflight.json_lines("--results", results)
    progress = _Progress(Console(stderr=True), total, results)
    result = _run_stoppable_by_sigterm(options, progress)
    if as_json:
        _print_json(result)
    else:
        _print_table(result, progress.console)
    if not result.ok:
        raise typer.Exit(1)


def _run_count(options: MatrixOptions) -> int:
    """How many runs ``options`` ask for, once they are known to be runnable.

    Raises:
        typer.BadParameter: what :meth:`MatrixOptions.check` refuses.
    """
    try:
        options.check()
    except ValueError as error:
        raise typer.BadParameter(str(error)) from error
    return len(options.specs())


@dataclass
class _Progress:
    """One line on stderr for every run that finishes, counted against the matrix's total."""

    console: Console
    total: int
    results: Path | None
    done: int = 0

    def on_run(self, result: RunResult) -> None:
        self.done += 1
        state = "ok" if result.ok else f"FAILED {result.error or ''}"
        counted = result.score
        applying = sum(1 for slot in result.consumers if slot["records"])
        self.console.print(
            f"[{self.done}/{self.total}] {result.spec.key}: {result.crashes} crashes, "
            f"{result.kills} kills, {counted.records} records, {counted.duplicates} "
            f"duplicates, {counted.losses} lost, {counted.dead_lettered} "
            f"dead-lettered, {applying} consumers with records, "
            f"{sum(1 for n in result.applied.values() if n)} applications applying, "
            f"{sum(1 for n in result.members.values() if n)} members with records, "
            f"{result.handoffs} handoffs, "
            f"{result.seconds:.0f} s, {state}"
        )

    def on_resume(self, count: int) -> None:
        self.done += count
        self.console.print(f"{count} of {self.total} runs taken from {self.results}")

    def on_start(self, where: str) -> None:
        self.console.print(f"verifying {self.total} runs: {where}", soft_wrap=True)


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)


def _run_stoppable_by_sigterm(options: MatrixOptions, progress: _Progress) -> MatrixResult:
    # SIGTERM unwinds like an interrupt: pipelines are killed, then the PostgreSQL server and
    # the broker stopped. The caller's handler comes back afterwards, for a verify run inside
    # a longer-lived process.
    previous = signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        return run_matrix(options, progress.on_run, progress.on_resume, progress.on_start)
    finally:
        signal.signal(signal.SIGTERM, previous)


def _print_json(result: MatrixResult) -> None:
    print(json.dumps({
        "ok": result.ok,
        "seconds": round(result.seconds, 1),
        "workdir": str(result.workdir) if result.workdir else None,
        "cells": [cell.to_json() for cell in result.cells],
    }, indent=2))


def _print_table(result: MatrixResult, stderr: Console) -> None:
    console = Console()
    console.print(render(result, console.width))
    if result.workdir is not None:
        stderr.print(f"run state kept in {result.workdir}")
