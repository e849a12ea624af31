"""One verification run: produce, crash and restart the pipeline until drained, then count.

A run owns a fresh topic and share group on the broker, a directory (checkpoints, journals,
Delta tables, SQLite files) and, for Postgres targets, a fresh database. Pipeline ``a`` is
started with a crash point armed at a seeded random hit (or a seeded random SIGKILL), again and
again on the same checkpoint until it has crashed ``crashes`` times, then once more to drain.
Further pipelines ``b``, ``c``, ... in the same share group, when asked for, run beside it as
separate applications without crash points, each with its own checkpoint, journal and
``app_id``, writing the same sinks; every start waits until each of them has arrived once,
so that they join the group together. With
handoffs, every start stalls once with a batch at the strategy's hold point (see
:mod:`kafka_share_eos.verify.stall`), so that the broker hands its records to another
application while it still holds them. A fault run (its point names an outage of
:mod:`kafka_share_eos.verify.outages`) crashes nothing: its outage strikes while pipeline ``a``
holds its second batch, and that one start must drain the group.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos import faults
from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.source.status import journal_status
from kafka_share_eos.testing.postgres import PostgresDatabases
from kafka_share_eos.verify import defaults
from kafka_share_eos.verify.brokers import VerifyBroker
from kafka_share_eos.verify.disturb import SessionDropper
from kafka_share_eos.verify.outages import OUTAGES, Scene
from kafka_share_eos.verify.outages.driver import FAULT_IDLE_MS, FaultDriver, hold_environment
from kafka_share_eos.verify.outages.gaps import applied_times, stall_seconds
from kafka_share_eos.verify.pipeline import PROGRESS_FILE, START_BARRIER_ENV, PipelineConfig
from kafka_share_eos.verify.points import RANDOM_KILL
from kafka_share_eos.verify.process import Exit, PipelineProcess
from kafka_share_eos.verify.records import plan_records, produce
from kafka_share_eos.verify.registry import TARGETS
from kafka_share_eos.verify.score import Score, score
from kafka_share_eos.verify.targets import Produced, RunContext, Target, dead_lettered

if TYPE_CHECKING:
    from kafka_share_eos.testing.spark_cluster import SparkCluster

# Generous: a run's pipeline on a loaded machine, with a fault's failover and long drain.
START_TIMEOUT_S = 600.0
# Seconds after a start: a pipeline plans its first batch ~6 s after it starts and drains 40
# records ~4 s later; a few kills still land during start-up.
KILL_WINDOW_S = (4.0, 10.0)
MAX_FAILED_STARTS = 4
# A handoff stalls an application's consumers past the broker's session timeout (3 s) and
# record lock (4 s), and the others keep polling through it rather than ending their drain.
HANDOFF_STALL_S = 8.0
HANDOFF_IDLE_MS = 12_000


@dataclass(frozen=True)
class Mix:
    """What else goes on during a run besides the crashes."""

    pipelines: int = defaults.PIPELINES
    """Applications consuming the run's share group into the same sinks; the first is the one
    crashed at the run's point."""
    session_drops: bool = False
    slow_sink: bool = False
    bad_records: bool = False
    random_kills: bool = False
    after_journal: bool = False
    """Pipelines ACCEPT records right after the journal write (``acknowledge=afterJournal``,
    polling ahead while Spark runs a batch) instead of after Spark's commit."""
    consumers: int = defaults.CONSUMERS
    """Share consumers per pipeline (the source's ``consumers``): above 1 they poll in executor
    tasks, under afterJournal."""
    handoffs: bool = False
    """Every pipeline start stalls once with a batch at the strategy's hold point (read what it
    decides on, not committed): its share consumers stop answering past the session timeout,
    so the broker hands its records to another pipeline while the batch still holds them."""


@dataclass(frozen=True)
class RunSpec:
    """One run of one cell of the matrix."""

    target: str
    point: str
    index: int
    seed: int
    records: int = defaults.RECORDS
    crashes: int = defaults.CRASHES
    per_trigger: int = defaults.PER_TRIGGER
    partitions: int = defaults.PARTITIONS
    mix: Mix = field(default_factory=Mix)

    @property
    def key(self) -> str:
        """``target-point-index``, also the run's directory name."""
        return f"{self.target}-{self.point}-{self.index}"

    @property
    def rng_seed(self) -> str:
        """Seed of everything random in this run (records, crash hits, kill moments)."""
        return f"{self.seed}:{self.target}:{self.point}:{self.index}"


@dataclass
class RunResult:
    """What happened in a run and what the sinks hold afterwards."""

    spec: RunSpec
    score: Score
    starts: int = 0
    crashes: int = 0
    kills: int = 0
    failed_starts: int = 0
    session_drops: int = 0
    absorbed: int = 0
    redelivered: int = 0
    seconds: float = 0.0
    cycle_seconds: list[float] = field(default_factory=list)
    consumers: list[dict[str, int]] = field(default_factory=list)
    """Records journaled per consumer slot by the crashed pipeline, over its runs."""
    applied: dict[str, int] = field(default_factory=dict)
    """Records each pipeline (application) applied, by pipeline name."""
    held: dict[str, int] = field(default_factory=dict)
    """Distinct records each pipeline held in batches its ``foreachBatch`` started, applied or
    not (a batch killed mid-way held its records too), by name."""
    handoffs: int = 0
    """Records that batches of more than one pipeline held: the broker handed them on while
    one application's batch still held them (or after it was killed mid-batch)."""
    members: dict[str, int] = field(default_factory=dict)
    """Records each share-group member journaled, as ``pipeline/member`` (a pipeline's
    runner consumer is ``pipeline/runner``)."""
    fault: dict[str, Any] | None = None
    """In a fault run: what the outage did, when, and the stall (see
    :meth:`kafka_share_eos.verify.outages.driver.FaultDriver.report`)."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """No duplicate, no loss, no error."""
        return self.error is None and self.score.ok


@dataclass
class RunEnvironment:
    """What runs share: the broker, the Postgres server, a working directory."""

    broker: VerifyBroker
    work: Path
    postgres: PostgresDatabases | None = None
    slow_sink_seconds: float = 0.0
    spark: SparkCluster | None = None
    """The Spark standalone cluster the pipelines of a worker fault's runs use."""


def execute(spec: RunSpec, env: RunEnvironment) -> RunResult:
    """Carry out one run and score it."""
    started = time.monotonic()
    target = TARGETS[spec.target]()
    outage = OUTAGES.get(spec.point)
    with _database(env, target) as postgres_url:
        topic = f"verify-{uuid.uuid4().hex[:12]}"
        ctx = RunContext(env.work / spec.key, postgres_url, env.broker.bootstrap_servers, topic)
        # A run cut short by an interrupted verifier left its directory behind, unrecorded.
        shutil.rmtree(ctx.run_dir, ignore_errors=True)
        ctx.run_dir.mkdir(parents=True)
        env.broker.create_topic(topic, spec.partitions)
        env.broker.prepare_group(topic)
        planned = plan_records(spec.records, spec.rng_seed, spec.mix.bad_records)
        produced = produce(env.broker.bootstrap_servers, topic, planned, spec.partitions)
        target.setup(ctx, planned)
        # Created once here: two pipelines creating it at the same moment would race.
        SqlDeadLetters(ctx.dead_letters()).close()
        config = PipelineConfig(
            target=spec.target,
            run_dir=str(ctx.run_dir),
            bootstrap_servers=(env.broker.kafka().proxied_bootstrap_servers
                               if outage is not None and outage.proxied
                               else env.broker.bootstrap_servers),
            topic=topic,
            group_id=topic,
            postgres_url=postgres_url,
            max_records_per_trigger=spec.per_trigger,
            slow_sink_seconds=env.slow_sink_seconds if spec.mix.slow_sink else 0.0,
            slow_sink_share=0.3 if spec.mix.slow_sink else 0.0,
            acknowledge=(
                "afterJournal" if spec.mix.after_journal or spec.mix.consumers > 1
                else "afterCommit"
            ),
            consumers=spec.mix.consumers,
            seed=spec.seed,
            idle_ms=(FAULT_IDLE_MS if outage is not None
                     else HANDOFF_IDLE_MS if spec.mix.handoffs else PipelineConfig.idle_ms),
            handoff_stall_seconds=HANDOFF_STALL_S if spec.mix.handoffs else 0.0,
            spark_master=(env.spark.master_url
                          if env.spark is not None and outage is not None and outage.spark_workers
                          else None),
        )
        config.save(ctx.run_dir / "config.json")
        supervisor = _Supervisor(spec, config, ctx, target, produced)
        with contextlib.ExitStack() as stack:
            dropper = (
                stack.enter_context(SessionDropper(env.broker.bootstrap_servers, spec.rng_seed))
                if spec.mix.session_drops
                else None
            )
            driver = None
            if outage is not None:
                driver = FaultDriver(
                    outage(),
                    Scene(env.broker.kafka(), topic, topic, ctx.run_dir, spark=env.spark),
                    supervisor.gate, target.hold_point, lambda: supervisor.progress_lines("a"),
                ).start()
                stack.callback(driver.stop)
            result = supervisor.run()
        if driver is not None:
            stall = (None if driver.struck_at is None
                     else stall_seconds(applied_times(supervisor.progress_lines()),
                                        driver.struck_at))
            result.fault = driver.report(stall)
            result.error = result.error or driver.error
        result.session_drops = dropper.drops if dropper is not None else 0
        result.consumers = _consumers(config.pipeline_dir("a") / "journal")
        result.members = {
            f"{name}/{member}": records
            for name in supervisor.names
            for member, records in _members(config.pipeline_dir(name) / "journal").items()
        }
        result.score = score(target.landed(ctx, produced), produced, supervisor.dead_lettered())
        result.seconds = time.monotonic() - started
        return result


def _consumers(journal: Path) -> list[dict[str, int]]:
    try:
        return journal_status(str(journal)).consumers
    except FileNotFoundError:
        return []


def _parsed(line: str) -> dict[str, Any] | None:
    """A progress line, or None for one a SIGKILL cut short as it was appended."""
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _members(journal: Path) -> dict[str, int]:
    try:
        return journal_status(str(journal)).members
    except FileNotFoundError:
        return {}


@contextlib.contextmanager
def _database(env: RunEnvironment, target: Target) -> Iterator[str | None]:
    if not target.needs_postgres:
        yield None
        return
    if env.postgres is None:
        raise ConfigurationError(f"target {target.name!r} needs PostgreSQL and none was given")
    name = f"kse_verify_{uuid.uuid4().hex[:12]}"
    url = env.postgres.create_database(name)
    try:
        yield url
    finally:
        env.postgres.drop_database(name)


class _Supervisor:
    """Starts, crashes and restarts the pipelines of one run."""

    def __init__(
        self,
        spec: RunSpec,
        config: PipelineConfig,
        ctx: RunContext,
        target: Target,
        produced: Produced,
    ) -> None:
        self.spec = spec
        self.config = config
        self.ctx = ctx
        self.target = target
        self.produced = produced
        self.rng = random.Random(spec.rng_seed)
        self.config_path = ctx.run_dir / "config.json"
        self.crash_record = ctx.run_dir / "crashes.log"
        self.result = RunResult(spec, Score.empty())
        self.names = [chr(ord("a") + i) for i in range(spec.mix.pipelines)]
        self._others: dict[str, PipelineProcess | None] = dict.fromkeys(self.names[1:])
        self._kills_left = dict.fromkeys(self.names[1:], spec.crashes)
        # The start barrier: one file per application that arrived at it.
        self._arrivals = ctx.run_dir / "started"
        self.fault = spec.point in OUTAGES
        self.gate = ctx.run_dir / "fault-gate"
        """Where pipeline ``a`` of a fault run waits while its outage strikes."""

    def run(self) -> RunResult:
        result = self.result
        confirmations = 0
        try:
            while result.starts < 2 * self.spec.crashes + MAX_FAILED_STARTS + 2:
                self._keep_others_running()
                outcome, seconds = self._start_first()
                if outcome in (Exit.CRASHED, Exit.KILLED):
                    result.cycle_seconds.append(seconds)
                    continue
                if outcome is Exit.FAILED and self.fault:
                    result.error = f"the query stopped on the fault:\n{self._tail('a')}"
                    break
                if outcome is Exit.FAILED:
                    result.failed_starts += 1
                    if result.failed_starts > MAX_FAILED_STARTS:
                        result.error = f"pipeline keeps failing:\n{self._tail('a')}"
                        break
                    continue
                self._drain_others()
                if self._complete():
                    break
                if self.fault:
                    result.error = "the drain ended with records not yet applied"
                    break
                # Drained with records missing: one more start tells "not yet" from "lost".
                confirmations += 1
                if confirmations > 1:
                    break
            else:
                result.error = f"gave up after {result.starts} starts"
        finally:
            for other in self._others.values():
                if other is not None:
                    other.kill()
                    other.wait(10)
        self._read_progress()
        return result

    def _start_first(self) -> tuple[Exit, float]:
        armed = self.result.crashes + self.result.kills < self.spec.crashes
        point = self.spec.point
        crash_at = None
        kill_after = None
        if armed and point != RANDOM_KILL:
            # Beside other applications this one may run as few as one batch (on Kafka the
            # others take most records of a shared partition while its batch is held), so it
            # crashes at the point's first hit; alone, at a random one of its batches.
            hit = (1 if self.spec.mix.pipelines > 1
                   else self.rng.randint(1, max(1, self._batches_left())))
            crash_at = faults.crash_spec(point, hit)
        if armed and (point == RANDOM_KILL or self.spec.mix.random_kills):
            kill_after = self.rng.uniform(*KILL_WINDOW_S)
        self.result.starts += 1
        process = self._process("a", crash_at)
        outcome = self._wait(process, kill_after)
        if outcome is Exit.CRASHED:
            self.result.crashes += 1
        elif outcome is Exit.KILLED:
            self.result.kills += 1
        return outcome, time.monotonic() - process.started

    def _wait(self, process: PipelineProcess, kill_after: float | None) -> Exit:
        timer = threading.Timer(kill_after, process.kill) if kill_after is not None else None
        if timer is not None:
            timer.start()
        try:
            return process.wait(START_TIMEOUT_S)
        finally:
            if timer is not None:
                timer.cancel()

    def _process(self, name: str, crash_at: str | None) -> PipelineProcess:
        directory = self.config.pipeline_dir(name)
        directory.mkdir(parents=True, exist_ok=True)
        env = {}
        if self.spec.mix.pipelines > 1:
            # The applications join the group together, so every one gets records. Every start
            # passes the barrier: when ``a`` is killed before it arrived, its restart releases
            # the others (later starts find everyone arrived and go straight on); the others are
            # killed only after they arrived.
            env[START_BARRIER_ENV] = f"{self._arrivals}:{self.spec.mix.pipelines}"
            self._arrivals.mkdir(exist_ok=True)
        if self.fault and name == "a" and self.result.starts == 1:
            env.update(hold_environment(self.target.hold_point, self.gate))
        if self.spec.mix.handoffs:
            gate = directory / "hold-gate"
            shutil.rmtree(gate, ignore_errors=True)
            gate.mkdir()
            hit = self.rng.randint(1, self._batches_left())
            env[faults.HOLD_AT_ENV] = faults.crash_spec(self.target.hold_point, hit)
            env[faults.HOLD_GATE_ENV] = str(gate)
        return PipelineProcess(
            self.config_path, name, directory / "output.log", crash_at, self.crash_record,
            extra_env=env,
        )

    def _keep_others_running(self) -> None:
        """Start every other pipeline that is not running; with random kills, SIGKILL each at
        a random moment, up to ``crashes`` times."""
        for name, other in self._others.items():
            if other is not None and not other.running:
                self._reap(name)
            if self._others[name] is None:
                started = self._process(name, None)
                self._others[name] = started
                if self.spec.mix.random_kills and self._kills_left[name] > 0:
                    self._kills_left[name] -= 1
                    delay = self.rng.uniform(*KILL_WINDOW_S)
                    threading.Thread(target=self._kill_after_arrival, args=(name, started, delay),
                                     daemon=True).start()

    def _kill_after_arrival(self, name: str, process: PipelineProcess, delay: float) -> None:
        """SIGKILL ``process`` ``delay`` seconds after it arrived at the start barrier. Killed
        before, it would hold the others there until its restart, which comes only once
        pipeline ``a`` exits."""
        arrived = self._arrivals / name
        deadline = time.monotonic() + START_TIMEOUT_S
        while process.running and not arrived.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(delay)
        if process.running:
            process.kill()

    def _drain_others(self) -> None:
        """Let the other pipelines drain too before the sinks are counted."""
        for name, other in self._others.items():
            if other is not None:
                self._reap(name)

    def _reap(self, name: str) -> None:
        other = self._others[name]
        assert other is not None
        if other.wait(START_TIMEOUT_S) is Exit.FAILED:
            self.result.failed_starts += 1
        self._others[name] = None

    def _batches_left(self) -> int:
        written = sum(int(line.get("written", 0)) for line in self.progress_lines())
        left = max(0, len(self.produced) - written)
        return max(1, math.ceil(left / self.spec.per_trigger))

    def _complete(self) -> bool:
        counted = score(self.target.landed(self.ctx, self.produced), self.produced,
                        self.dead_lettered())
        return counted.losses == 0

    def dead_lettered(self) -> frozenset[tuple[int, int]]:
        """Records the strategy diverted to the run's dead letters."""
        return dead_lettered(self.ctx)

    def progress_lines(self, name: str | None = None) -> list[dict[str, Any]]:
        """The progress lines of pipeline ``name``, or of every pipeline."""
        lines = []
        for pipeline in self.names if name is None else [name]:
            path = self.config.pipeline_dir(pipeline) / PROGRESS_FILE
            if path.exists():
                lines += [parsed for line in path.read_text().splitlines()
                          if (parsed := _parsed(line)) is not None]
        return lines

    def _read_progress(self) -> None:
        lines = self.progress_lines()
        self.result.absorbed = sum(line.get("absorbed", 0) for line in lines)
        self.result.redelivered = sum(line.get("redelivered", 0) for line in lines)
        held_by: dict[tuple[int, int], set[str]] = {}
        for name in self.names:
            own = self.progress_lines(name)
            self.result.applied[name] = sum(line.get("written", 0) for line in own)
            for line in own:
                for partition, offset in line.get("records", []):
                    held_by.setdefault((partition, offset), set()).add(name)
        for name in self.names:
            self.result.held[name] = sum(1 for names in held_by.values() if name in names)
        self.result.handoffs = sum(1 for names in held_by.values() if len(names) > 1)

    def _tail(self, name: str) -> str:
        log = self.config.pipeline_dir(name) / "output.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""
