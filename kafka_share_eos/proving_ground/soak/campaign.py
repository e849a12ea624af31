"""One soak: a pipeline run for a set time under a steady producer and a fault every few
minutes, then drained and counted.

The pipeline (:mod:`~kafka_share_eos.proving_ground.soak.soak_pipeline`) reads its share group
with ``consumers`` share consumers, and whenever it exits (killed, failed on a fault, or done
with an idle group) it starts again on its checkpoint. Once it finished ``warm_up_batches``
batches the soak takes the levels the end is compared with (resident memory, journal files,
ledger rows), and from then on strikes a fault every ``fault_every`` seconds on average, the
kinds taken in rounds, each round in a random order, so that every kind strikes as often as
the others. When the time is up the fault in force is healed, the producer stops, the
pipeline drains the group, and every record produced is looked for in the Delta table and the
dead letters.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafka_share_eos.proving_ground.soak.gauges import (
    Life,
    Memory,
    ProgressTail,
    delta_rows,
    heap_live,
    journal_files,
    memory,
)
from kafka_share_eos.proving_ground.soak.schedule import FaultSchedule, SoakOptions
from kafka_share_eos.proving_ground.soak.services import Services
from kafka_share_eos.proving_ground.soak.soak_pipeline import (
    LEDGER_WINDOW,
    POLL_RECORDS,
    RECORD_LOCKS,
    SoakDedup,
    dead_lettered,
)
from kafka_share_eos.proving_ground.soak.steady_producer import SteadyProducer
from kafka_share_eos.proving_ground.soak.strikes import STRIKES, SoakScene, Strike
from kafka_share_eos.proving_ground.soak.verdict import SoakResult
from kafka_share_eos.proving_ground.verify.pipeline import PROGRESS_FILE, PipelineConfig
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess
from kafka_share_eos.proving_ground.verify.score import score
from kafka_share_eos.proving_ground.verify.targets import Produced, RunContext
from kafka_share_eos.sharegroup.group_config import MAX_RECORD_LOCKS

PIPELINE = "a"
DRAIN_TIMEOUT_S = 900.0
DRAIN_STARTS = 3
"""Starts after the producer stopped: one drains; the others tell "not yet" from "lost"."""
LEVELS_EVERY_S = 60.0
WARM_UP_GRACE_S = 600.0
"""How long past the set time a warm-up not yet over may go on before the soak fails."""
DRIVER_HEAP_MB = 1024
"""The pipeline driver's fixed heap: Spark's default ``spark.driver.memory``, committed whole
at the start so that its resident memory measures growth outside the heap, and the heap's live
objects are measured apart (:func:`~kafka_share_eos.proving_ground.soak.gauges.heap_live`)."""
FILLED = 0.95
"""The share of its window the ledger holds once the warm-up is over: the pipeline caught up
with the backlog, and the records of the window not applied yet are those in flight and the
dead-lettered ones."""
IDLE_MS = 10_000
"""How long the pipeline polls an idle group before it exits (and is started again): past a
record lock (4 s), so that the last drain does not end with records a consumer still holds."""


@dataclass
class _Fault:
    strike: Strike
    at: float
    thread: threading.Thread | None = None
    entry: dict[str, object] = field(default_factory=dict)


class Soak:
    """One soak on ``services`` in directory ``work``; ``say`` prints a progress line."""

    def __init__(self, options: SoakOptions, services: Services, work: Path,
                 say: Callable[[str], None]) -> None:
        self.options, self.services, self.say = options, services, say
        self.rng = random.Random(options.seed)
        self.topic = f"soak-{uuid.uuid4().hex[:12]}"
        self.run_dir = work / self.topic
        self.run_dir.mkdir(parents=True)
        self.result = SoakResult(options.minutes, warm_up_batches=options.warm_up_batches,
                                 setup=self._setup())
        self.process: PipelineProcess | None = None
        self.lives: list[Life] = []
        self.started = 0.0
        self._lock = threading.Lock()
        self._fault: _Fault | None = None
        self._schedule = FaultSchedule(options.faults, self.rng)

    def _setup(self) -> dict[str, object]:
        o = self.options
        return {"broker": f"Apache Kafka, {3} nodes", "target": SoakDedup.name,
                "consumers": o.consumers, "partitions": o.partitions, "rate": o.rate,
                "backlog": o.backlog, "per_trigger": o.per_trigger,
                "fault_every_s": o.fault_every, "fault_seconds": o.fault_seconds,
                "poison_every": o.poison_every, "seed": o.seed}

    def run(self) -> SoakResult:
        """Run the soak and judge it."""
        services = self.services
        services.broker.create_topic(self.topic, self.options.partitions)
        services.broker.prepare_group(self.topic)
        services.broker.kafka().set_group_config(self.topic, {MAX_RECORD_LOCKS: RECORD_LOCKS})
        self.ctx = RunContext(
            self.run_dir, services.postgres.create_database(f"soak_{self.topic[5:]}"),
            services.broker.bootstrap_servers, self.topic,
            store_root=services.s3.url(self.topic),
            storage_options=services.s3.storage_options())
        self.config = self._config()
        self.progress = ProgressTail(self.config.pipeline_dir(PIPELINE) / PROGRESS_FILE)
        self.scene = SoakScene(
            services.broker.kafka(), services.postgres, services.s3, services.store_proxy,
            services.http_faults, self.topic, self.run_dir, self._kill_pipeline,
            [self.ctx.path(name) for name in SoakDedup.delta_tables],
            services.s3.storage_options())
        producer = SteadyProducer(
            services.broker.bootstrap_servers, self.topic, self.options.partitions,
            rate=self.options.rate, backlog=self.options.backlog,
            poison_every=self.options.poison_every, seed=self.options.seed)
        self.started = time.monotonic()
        producer.start()
        try:
            end_memory = self._soak()
        finally:
            self._heal_in_force()
            producer.stop()
            if self.result.error is not None and self.process is not None:
                self.process.kill()
                self.process.wait(10)
        self.result.rss_end_mib = end_memory.as_dict()
        self.result.lives = [life.as_dict() for life in self.lives]
        self.result.records = len(producer.produced())
        self.result.producer_failures = len(producer.failed)
        if self.result.error is None:
            self._drain(producer.produced())
        else:
            # Not drained: the records not applied yet count as lost, the error says why.
            self._count(producer.produced())
        self._levels("end")
        self.result.judge(list(self.options.faults))
        return self.result

    def _config(self) -> PipelineConfig:
        config = PipelineConfig(
            target=SoakDedup.name, run_dir=str(self.run_dir),
            bootstrap_servers=self.services.broker.bootstrap_servers, topic=self.topic,
            group_id=self.topic, postgres_url=self.ctx.postgres_url,
            max_records_per_trigger=self.options.per_trigger, max_poll_records=POLL_RECORDS,
            idle_ms=IDLE_MS,
            acknowledge="afterJournal", consumers=self.options.consumers,
            seed=self.options.seed, store_root=self.ctx.store_root,
            driver_heap_mb=DRIVER_HEAP_MB)
        config.save(self.run_dir / "config.json")
        return config

    def _soak(self) -> Memory:
        """Until the time is up: keep the pipeline running, sample, strike faults; the
        pipeline's memory at the end."""
        deadline = self.started + self.options.minutes * 60
        next_sample = next_levels = next_fault = 0.0
        last_applied, progressed = -1, time.monotonic()
        end_memory = Memory(0.0, 0.0)
        while self.result.error is None and (
                (now := time.monotonic()) < deadline
                # A warm-up slowed by a loaded machine gets the time it needs, within a bound.
                or (not self.result.rss_start_mib and now < deadline + WARM_UP_GRACE_S)):
            self._tend()
            self.progress.read()
            if self.progress.applied != last_applied:
                last_applied, progressed = self.progress.applied, now
            elif now - progressed > self.options.stall_seconds:
                self.result.error = (f"no record applied for {self.options.stall_seconds:.0f} s"
                                     f":\n{self._tail()}")
            if now >= next_sample:
                end_memory = self._sample(now, levels=now >= next_levels) or end_memory
                next_sample = now + self.options.sample_seconds
                next_levels = next_levels if now < next_levels else now + LEVELS_EVERY_S
            if not self.result.rss_start_mib and self._warm():
                self._warmed_up()
                # A warm-up slowed by a loaded machine must not crowd a fault kind out of the
                # time left: each gets its turn at the mean gap.
                deadline = max(deadline, now + len(self.options.faults)
                               * (self.options.fault_every + self.options.fault_seconds))
                next_fault = now + self._schedule.gap(deadline - now, self.options.fault_every)
            if self.result.rss_start_mib and next_fault and now >= next_fault \
                    and self._fault_over() and self.options.faults:
                self._strike(self._schedule.next())
                next_fault = now + self._schedule.gap(deadline - now, self.options.fault_every)
            time.sleep(0.5)
        if self.result.error is None and not self.result.rss_start_mib:
            self.result.error = (f"the pipeline finished {self.progress.batches} batches, "
                                 f"fewer than the warm-up's {self.options.warm_up_batches}")
        return end_memory

    def _warm(self) -> bool:
        """Whether the warm-up is over: its batches finished, and the ledger filled the window
        its retention keeps (its level at the end is compared with this one)."""
        filled = FILLED * LEDGER_WINDOW * self.options.partitions
        if self.progress.batches < self.options.warm_up_batches or self.progress.applied < filled:
            return False
        # The levels that ended it are those of the warm-up: a prune right after would take
        # the ledger below its window only until the records in flight are applied.
        levels = self._measured_levels()
        if levels["ledger_rows"] < filled:
            return False
        self.result.journal_files["warm_up"] = levels["journal_files"]
        self.result.journal_metrics["warm_up"] = levels["journal_metrics"]
        self.result.ledger_rows["warm_up"] = levels["ledger_rows"]
        return True

    def _tend(self) -> None:
        """Start the pipeline again if it exited."""
        with self._lock:
            process = self.process
            if process is not None and process.running:
                return
            if process is not None and process.wait(10) is Exit.FAILED:
                self.result.failed_starts += 1
            self.process = self._start()

    def _start(self) -> PipelineProcess:
        directory = self.config.pipeline_dir(PIPELINE)
        directory.mkdir(parents=True, exist_ok=True)
        self.result.pipeline_starts += 1
        self.lives.append(Life(time.monotonic() - self.started, self.progress.batches))
        return PipelineProcess(
            self.run_dir / "config.json", PIPELINE, directory / "output.log", None,
            self.run_dir / "crashes.log", extra_env=self.services.pipeline_environment(),
            module="kafka_share_eos.proving_ground.soak.soak_pipeline")

    def _kill_pipeline(self) -> str:
        with self._lock:
            process = self.process
        if process is None or not process.running:
            return "the pipeline was not running: nothing killed"
        process.kill()
        return f"SIGKILL of the pipeline's process group (pid {process.pid})"

    def _sample(self, now: float, *, levels: bool) -> Memory | None:
        process = self.process
        used = memory(process.pid) if process is not None and process.running else None
        sample: dict[str, object] = {"t": round(now - self.started, 1),
                                     "applied": self.progress.applied}
        if used is not None:
            sample |= {f"rss_{name}": value for name, value in used.as_dict().items()}
        life = self.lives[-1]
        if levels:
            # The store may be down on purpose (store-kill): no level in this sample then.
            with contextlib.suppress(Exception):
                sample |= self._measured_levels()
            if life.warm_up is not None and process is not None \
                    and (live := heap_live(process.pid)) is not None:
                life.heap_live.append(live)
                sample["heap_live_mib"] = round(live, 1)
        self.result.samples.append(sample)
        # A pipeline just started has no source runner yet: not a measure of its memory.
        if used is None or used.runners == 0:
            return None
        life.last = used
        if life.warm_up is None and \
                self.progress.batches - life.batches_before >= self.options.warm_up_batches:
            life.warm_up = used
        return used

    def _measured_levels(self) -> dict[str, int]:
        files, metrics = journal_files(self.services.s3.obstore_store(),
                                       f"{self.topic}/pipeline-{PIPELINE}/journal")
        return {"journal_files": files, "journal_metrics": metrics,
                "ledger_rows": delta_rows(self.ctx.path("ledger"),
                                          self.services.s3.storage_options())}

    def _levels(self, when: str) -> None:
        levels = self._measured_levels()
        self.result.journal_files[when] = levels["journal_files"]
        self.result.journal_metrics[when] = levels["journal_metrics"]
        self.result.ledger_rows[when] = levels["ledger_rows"]

    def _warmed_up(self) -> None:
        process = self.process
        used = memory(process.pid) if process is not None else Memory(0.0, 0.0)
        self.result.rss_start_mib = used.as_dict()
        self.lives[-1].warm_up = self.lives[-1].warm_up or used
        self.result.setup["warm_up_seconds"] = round(time.monotonic() - self.started, 1)

    def _strike(self, kind: str) -> None:
        fault = _Fault(STRIKES[kind](), round(time.monotonic() - self.started, 1))
        fault.thread = threading.Thread(target=self._carry_out, args=(fault,),
                                        name=f"soak-{kind}", daemon=True)
        self._fault = fault
        fault.thread.start()

    def _carry_out(self, fault: _Fault) -> None:
        entry: dict[str, object] = {"at": fault.at, "kind": fault.strike.name}
        fault.entry = entry
        try:
            entry["did"] = fault.strike.strike(self.scene)
            if fault.strike.lasts:
                time.sleep(self.options.fault_seconds)
            entry["healed"] = fault.strike.heal(self.scene)
        except Exception as error:  # the soak fails on it, once the run is counted
            entry["error"] = f"{type(error).__name__}: {error}"
        self.result.fault_log.append(entry)
        self.result.faults[fault.strike.name] = self.result.faults.get(fault.strike.name, 0) + 1
        if "error" in entry:
            self.result.error = f"the fault {fault.strike.name} failed: {entry['error']}"
        minutes, seconds = divmod(int(fault.at), 60)
        healed = f"; {entry['healed']}" if entry.get("healed") else ""
        self.say(f"{minutes:3d}:{seconds:02d} {fault.strike.name}: "
                 f"{entry.get('did', entry.get('error'))}{healed}")

    def _fault_over(self) -> bool:
        return self._fault is None or self._fault.thread is None \
            or not self._fault.thread.is_alive()

    def _heal_in_force(self) -> None:
        if self._fault is not None and self._fault.thread is not None:
            self._fault.thread.join()

    def _drain(self, produced: Produced) -> None:
        """Let the pipeline drain the group (starting it again when it stops), then count."""
        error: str | None = f"the pipeline failed each of its {DRAIN_STARTS} drains"
        for _ in range(DRAIN_STARTS):
            self._tend()
            assert self.process is not None
            if self.process.wait(DRAIN_TIMEOUT_S) is Exit.FAILED:
                self.result.failed_starts += 1
                continue
            error = None
            if self._count(produced) == 0:
                break
        self.result.error = error

    def _count(self, produced: Produced) -> int:
        """Count every record produced in the Delta table and the dead letters; the records
        lost."""
        counted = score(SoakDedup().landed(self.ctx, produced), produced, dead_lettered(self.ctx))
        self.result.duplicates, self.result.lost = counted.duplicates, counted.losses
        self.result.dead_lettered = counted.dead_lettered
        return counted.losses

    def _tail(self) -> str:
        log = self.config.pipeline_dir(PIPELINE) / "output.log"
        return log.read_text(errors="replace")[-2000:] if log.exists() else ""


def run_soak(options: SoakOptions, work: Path, say: Callable[[str], None]) -> SoakResult:
    """Start the servers, run one soak in ``work`` and stop everything again; ``say`` prints a
    line per fault."""
    from kafka_share_eos.proving_ground.soak.services import soak_services
    from kafka_share_eos.proving_ground.verify.process import accept_starts, stop_all

    with soak_services() as services:
        try:
            return Soak(options, services, work, say).run()
        finally:
            # A pipeline lives in its own session: an interrupt of the soak does not reach it.
            stop_all()
            accept_starts()
