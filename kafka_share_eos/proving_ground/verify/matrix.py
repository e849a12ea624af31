"""The verification matrix: targets x (crash points and faults) x runs, on one broker; crash
runs in parallel, fault runs one at a time (a fault stops brokers every run shares)."""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import sa
from kafka_share_eos.proving_ground.launchers.jvm import ensure_archive
from kafka_share_eos.proving_ground.launchers.postgres import (
    PostgresDatabases,
    PostgresServer,
    postgres_for_tests,
)
from kafka_share_eos.proving_ground.verify.broker_choice import verify_broker
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.outages import (
    OUTAGES,
    brokers_for,
    proxied_for,
    spark_workers_for,
)
from kafka_share_eos.proving_ground.verify.points import RANDOM_KILL
from kafka_share_eos.proving_ground.verify.process import accept_starts, stop_all, stopping
from kafka_share_eos.proving_ground.verify.results import ResultsFile, spec_key
from kafka_share_eos.proving_ground.verify.run import RunEnvironment, execute
from kafka_share_eos.proving_ground.verify.run_store import run_store
from kafka_share_eos.proving_ground.verify.score import Score
from kafka_share_eos.proving_ground.verify.spec import RunResult, RunSpec

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster

# A slow sink's batch outlasts the record lock (verify.brokers.RECORD_LOCK_MS).
SLOW_SINK_SECONDS = 5.0


@dataclass
class CellResult:
    """The runs of one ``(target, point)`` cell."""

    target: str
    point: str
    runs: list[RunResult] = field(default_factory=list)

    def total(self, name: str) -> int:
        """Sum of a :class:`RunResult` counter over the runs."""
        return sum(int(getattr(run, name)) for run in self.runs)

    def score_total(self, name: str) -> int:
        """Sum of a :class:`Score` counter over the runs."""
        return sum(int(getattr(run.score, name)) for run in self.runs)

    @property
    def exercised(self) -> bool:
        """Whether the crash point actually fired (or the random kill or the fault struck) in
        some run."""
        if self.point in OUTAGES:
            return any(run.fault is not None and run.fault["struck_at"] for run in self.runs)
        return self.total("kills" if self.point == RANDOM_KILL else "crashes") > 0

    def stalls(self) -> list[float]:
        """In a fault cell, each run's stall in seconds (runs that measured one)."""
        return [run.fault["stall_seconds"] for run in self.runs
                if run.fault is not None and run.fault["stall_seconds"] is not None]

    @property
    def ok(self) -> bool:
        """Every run exact and error-free, and the point exercised."""
        return self.exercised and all(run.ok for run in self.runs)

    @property
    def errors(self) -> list[str]:
        """The errors of failed runs."""
        return [f"{run.spec.key}: {run.error}" for run in self.runs if run.error]

    def consumers_applying(self) -> list[int]:
        """Per run, how many consumer slots journaled records for the crashed pipeline."""
        return [sum(1 for slot in run.consumers if slot["records"]) for run in self.runs]

    def applications_applying(self) -> list[int]:
        """Per run, how many pipelines (applications) applied records."""
        return [sum(1 for n in run.applied.values() if n) for run in self.runs]

    def members_acquiring(self) -> list[int]:
        """Per run, how many share-group members (of every application) took records."""
        return [sum(1 for n in run.members.values() if n) for run in self.runs]

    def cycle_seconds(self) -> list[float]:
        """Durations of every start that ended in a crash or kill."""
        return [s for run in self.runs for s in run.cycle_seconds]

    def to_json(self) -> dict[str, Any]:
        """The cell's totals and its runs, for ``--json``."""
        cycles = self.cycle_seconds()
        return {
            "strategy": self.target,
            "crash_point": self.point,
            "ok": self.ok,
            "exercised": self.exercised,
            "runs": len(self.runs),
            "records": self.score_total("records"),
            "crashes": self.total("crashes"),
            "kills": self.total("kills"),
            "starts": self.total("starts"),
            "duplicates": self.score_total("duplicates"),
            "losses": self.score_total("losses"),
            "dead_lettered": self.score_total("dead_lettered"),
            "redeliveries_absorbed": self.total("absorbed"),
            "redelivered": self.total("redelivered"),
            "failed_starts": self.total("failed_starts"),
            "consumers_applying": self.consumers_applying(),
            "applications_applying": self.applications_applying(),
            "handoffs": self.total("handoffs"),
            "members_acquiring": self.members_acquiring(),
            "mean_crash_cycle_seconds": round(statistics.fmean(cycles), 2) if cycles else None,
            "max_stall_seconds": max(self.stalls(), default=None),
            "errors": self.errors,
            "run_details": [_run_json(run) for run in self.runs],
        }


def _run_json(run: RunResult) -> dict[str, Any]:
    return {
        "run": run.spec.index,
        "seed": run.spec.rng_seed,
        "starts": run.starts,
        "crashes": run.crashes,
        "kills": run.kills,
        "duplicates": run.score.duplicates,
        "losses": run.score.losses,
        "per_sink": {sink: {"duplicates": d, "losses": lost}
                     for sink, (d, lost) in run.score.per_sink.items()},
        "seconds": round(run.seconds, 1),
        "consumers": run.consumers,
        "applied_by_application": run.applied,
        "held_by_application": run.held,
        "handoffs": run.handoffs,
        "records_by_member": run.members,
        "fault": run.fault,
        "connect": run.connect,
        "error": run.error,
    }


@dataclass
class MatrixResult:
    """Every cell of a matrix run."""

    cells: list[CellResult]
    seconds: float = 0.0
    workdir: Path | None = None

    @property
    def ok(self) -> bool:
        """Whether every cell verified exactly-once."""
        return all(cell.ok for cell in self.cells)


@contextlib.contextmanager
def _postgres(options: MatrixOptions) -> Iterator[PostgresDatabases | None]:
    if not any(TARGETS[t].needs_postgres and not (p in OUTAGES and OUTAGES[p].owns_postgres)
               for t, p in options.cells()):
        yield None
    elif options.postgres_url is not None:
        yield PostgresDatabases(options.postgres_url)
    else:
        with postgres_for_tests() as server:
            yield server


@contextlib.contextmanager
def _spark(workers: int) -> Iterator[SparkCluster | None]:
    if not workers:
        yield None
        return
    from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster

    with SparkCluster(workers) as cluster:
        yield cluster


@contextlib.contextmanager
def _fault_environment(env: RunEnvironment, point: str, short_locks: bool
                       ) -> Iterator[RunEnvironment]:
    """Where a fault run runs: on a Kafka cluster of its own, started on the release its outage
    names, or on the matrix's; with a durable PostgreSQL server of its own when its outage
    kills it, or the matrix's; with an object store of its own when its outage strikes one."""
    outage = OUTAGES[point]
    with contextlib.ExitStack() as stack:
        if outage.kafka_version is not None:
            env = dataclasses.replace(env, broker=stack.enter_context(verify_broker(
                "kafka", short_locks, outage.brokers, outage.proxied, outage.kafka_version)))
        if outage.owns_postgres:
            env = dataclasses.replace(
                env, postgres=stack.enter_context(PostgresServer(durable=True)))
        if outage.owns_store:
            env = dataclasses.replace(env, store=stack.enter_context(outage.store_of_run()))
        yield env


def _where(env: RunEnvironment) -> str:
    broker = f"{env.broker.name} at {env.broker.bootstrap_servers}"
    postgres = "no PostgreSQL"
    if env.postgres is not None:
        url = sa.engine.make_url(env.postgres.url)
        postgres = f"PostgreSQL at {url.host}:{url.port}"
    journals = "" if env.store is None else f", durable paths on {env.store.root('')}"
    return f"{broker}, {postgres}, state in {env.work}{journals}"


def _safe_execute(spec: RunSpec, env: RunEnvironment) -> RunResult:
    try:
        return execute(spec, env)
    except Exception as error:  # one broken run must not hide the others' results
        return RunResult(spec, Score.empty(), error=f"{type(error).__name__}: {error}")


def run_matrix(
    options: MatrixOptions,
    on_run: Callable[[RunResult], None] | None = None,
    on_resume: Callable[[int], None] | None = None,
    on_start: Callable[[str], None] | None = None,
) -> MatrixResult:
    """Run every cell ``options.runs`` times, ``options.parallel`` runs at a time.

    With ``options.results``, runs recorded there count without running again, and every run
    that finishes is recorded (``on_resume`` learns how many were taken from the file).
    ``on_start`` learns where the broker, the PostgreSQL server and the runs' state are once
    they are up. An interrupt SIGKILLs the pipelines at once, then stops the broker, the
    PostgreSQL server and the object store this call started; the runs it cut short are not
    recorded.
    """
    started = time.monotonic()
    options.check()
    specs = options.specs()
    cells = {cell: CellResult(*cell) for cell in options.cells()}
    results_file = ResultsFile(options.results) if options.results is not None else None
    recorded = results_file.recorded() if results_file is not None else {}
    pending = [spec for spec in specs if spec_key(spec) not in recorded]
    for spec in specs:
        if spec_key(spec) in recorded:
            cells[(spec.target, spec.point)].runs.append(recorded[spec_key(spec)])
    if on_resume is not None and recorded:
        on_resume(len(specs) - len(pending))
    work = options.workdir or Path(tempfile.mkdtemp(prefix="kafka-share-eos-verify-"))
    work.mkdir(parents=True, exist_ok=True)
    accept_starts()
    # Made here, once, rather than by the first pipelines while their runs are timed.
    ensure_archive()
    short_locks = options.mix.slow_sink or options.mix.handoffs
    brokers = brokers_for(options.faults)
    proxy = proxied_for(options.faults)
    with (verify_broker(options.broker, short_locks, brokers, proxy) as broker,
          _postgres(options) as postgres,
          _spark(spark_workers_for(options.faults)) as spark,
          run_store(options.storage) as store):
        env = RunEnvironment(broker, work, postgres, SLOW_SINK_SECONDS, spark, store)
        if on_start is not None:
            on_start(_where(env))

        def one(spec: RunSpec, where: RunEnvironment = env) -> RunResult:
            result = _safe_execute(spec, where)
            if stopping():
                return result
            if results_file is not None:
                results_file.append(result)
            if on_run is not None:
                on_run(result)
            return result

        pool = ThreadPoolExecutor(max_workers=options.parallel)
        crashing = [spec for spec in pending if spec.point not in OUTAGES]
        try:
            for result in pool.map(one, crashing):
                cells[(result.spec.target, result.spec.point)].runs.append(result)
            # Round after round of every fault cell: a long loop cut short covers each alike.
            for spec in sorted(pending, key=lambda spec: spec.index):
                if spec.point in OUTAGES and not stopping():
                    with _fault_environment(env, spec.point, short_locks) as where:
                        result = one(spec, where)
                    cells[(result.spec.target, result.spec.point)].runs.append(result)
        except BaseException:
            stop_all()
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    matrix = MatrixResult(list(cells.values()), time.monotonic() - started, work)
    if matrix.ok and not options.keep and options.workdir is None:
        shutil.rmtree(work, ignore_errors=True)
        matrix.workdir = None
    return matrix
