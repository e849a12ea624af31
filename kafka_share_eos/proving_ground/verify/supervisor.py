"""The supervisor of one verification run's pipelines: it starts pipeline ``a`` with its crash
point armed, again and again on the same checkpoint, keeps the other applications running beside
it (killing them at random moments when asked), and reads what every pipeline reported."""

from __future__ import annotations

import json
import math
import random
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.verify.connect import ConnectCrashes
from kafka_share_eos.proving_ground.verify.outages import OUTAGES
from kafka_share_eos.proving_ground.verify.outages.driver import hold_environment
from kafka_share_eos.proving_ground.verify.pipeline import (
    PROGRESS_FILE,
    START_BARRIER_ENV,
    PipelineConfig,
)
from kafka_share_eos.proving_ground.verify.points import RANDOM_KILL
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess
from kafka_share_eos.proving_ground.verify.score import Score, score
from kafka_share_eos.proving_ground.verify.spec import RunResult, RunSpec
from kafka_share_eos.proving_ground.verify.targets import (
    Produced,
    RunContext,
    Target,
    dead_lettered,
)

# Generous: a run's pipeline on a loaded machine, with a fault's failover and long drain.
START_TIMEOUT_S = 600.0
# Seconds after a start: a pipeline plans its first batch ~6 s after it starts and drains 40
# records ~4 s later; a few kills still land during start-up.
KILL_WINDOW_S = (4.0, 10.0)
MAX_FAILED_STARTS = 4


def _parsed(line: str) -> dict[str, Any] | None:
    """A progress line, or None for one a SIGKILL cut short as it was appended."""
    try:
        parsed = json.loads(line)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


class Supervisor:
    """Starts, crashes and restarts the pipelines of one run."""

    def __init__(
        self,
        spec: RunSpec,
        config: PipelineConfig,
        ctx: RunContext,
        target: Target,
        produced: Produced,
        store_environment: Mapping[str, str] | None = None,
        connect: ConnectCrashes | None = None,
    ) -> None:
        self.spec = spec
        self.connect = connect
        """In a Spark Connect run, what kills its session's processes."""
        self.store_environment = dict(store_environment or {})
        """The settings of the object store the journals are on, for every pipeline process."""
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
        # A fault the pipeline may fail on is restarted from as a crash point is.
        self.one_start = self.fault and not OUTAGES[spec.point].restarts
        self.gate = ctx.run_dir / "fault-gate"
        """Where pipeline ``a`` of a fault run waits while its outage strikes."""
        self.restored: Callable[[], None] = lambda: None
        """Returns once a fault run's outage no longer holds back what it struck: a pipeline
        that failed on it starts again then, as an operator would restart it."""

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
                if outcome is Exit.FAILED and self.one_start:
                    result.error = f"the query stopped on the fault:\n{self._tail('a')}"
                    break
                if outcome is Exit.FAILED:
                    result.failed_starts += 1
                    if result.failed_starts > MAX_FAILED_STARTS:
                        result.error = f"pipeline keeps failing:\n{self._tail('a')}"
                        break
                    self.restored()
                    continue
                self._drain_others()
                if self._complete():
                    break
                if self.one_start:
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
        if self.connect is not None:
            result.connect = self.connect.report()
        return result

    def _start_first(self) -> tuple[Exit, float]:
        armed = self.result.crashes + self.result.kills < self.spec.crashes
        if self.connect is not None:
            return self._start_connect(self.connect, armed)
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

    def _start_connect(self, connect: ConnectCrashes, armed: bool) -> tuple[Exit, float]:
        """Start a Connect client; armed, hold a random batch of it mid-strategy and kill a
        process of its session there."""
        # After a first crash, the restart's first batch: a later one may never come when
        # the orphaned query of a killed client drained the group meanwhile.
        first = self.result.crashes == 0
        hit = (None if not armed
               else self.rng.randint(1, max(1, self._batches_left() // 2)) if first else 1)
        self.result.starts += 1
        process = self._process("a", None, connect.environment(hit))
        if hit is None:
            return process.wait(START_TIMEOUT_S), time.monotonic() - process.started
        outcome, struck = connect.strike(process, START_TIMEOUT_S)
        if struck:
            self.result.crashes += 1
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

    def _process(self, name: str, crash_at: str | None,
                 extra_env: Mapping[str, str] | None = None) -> PipelineProcess:
        directory = self.config.pipeline_dir(name)
        directory.mkdir(parents=True, exist_ok=True)
        env = {**self.store_environment, **(extra_env or {})}
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
