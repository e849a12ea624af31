"""One verification run: produce, crash and restart the pipeline until drained, then count.

A run owns a fresh topic and share group on the broker, a directory (checkpoints, journals,
Delta tables, SQLite files), a prefix named after its topic on the object store when the journals
are there, and, for Postgres targets, a fresh database. Pipeline ``a`` is
started with a crash point armed at a seeded random hit (or a seeded random SIGKILL), again and
again on the same checkpoint until it has crashed ``crashes`` times, then once more to drain.
Further pipelines ``b``, ``c``, ... in the same share group, when asked for, run beside it as
separate applications without crash points, each with its own checkpoint, journal and
``app_id``, writing the same sinks; every start waits until each of them has arrived once,
so that they join the group together. With
handoffs, every start stalls once with a batch at the strategy's hold point (see
:mod:`kafka_share_eos.proving_ground.verify.stall`), so that the broker hands its records to another
application while it still holds them. A fault run (its point names an outage of
:mod:`kafka_share_eos.proving_ground.verify.outages`) crashes nothing: its outage strikes while
pipeline ``a`` holds its second batch, and that one start must drain the group (or, for an
outage the pipeline may fail on, its restarts on the same checkpoint).
"""

from __future__ import annotations

import contextlib
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.postgres import PostgresDatabases, PostgresServer
from kafka_share_eos.proving_ground.verify.broker_choice import VerifyBroker
from kafka_share_eos.proving_ground.verify.connect import ConnectCrashes, connect_server
from kafka_share_eos.proving_ground.verify.disturb import SessionDropper
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.outages import OUTAGES, Scene
from kafka_share_eos.proving_ground.verify.outages.driver import FAULT_IDLE_MS, FaultDriver
from kafka_share_eos.proving_ground.verify.outages.gaps import applied_times, stall_seconds
from kafka_share_eos.proving_ground.verify.pipeline import PipelineConfig
from kafka_share_eos.proving_ground.verify.points import CONNECT_POINTS
from kafka_share_eos.proving_ground.verify.records import plan_records, produce
from kafka_share_eos.proving_ground.verify.run_store import RunStore, read_journals
from kafka_share_eos.proving_ground.verify.score import score
from kafka_share_eos.proving_ground.verify.spec import RunResult, RunSpec
from kafka_share_eos.proving_ground.verify.supervisor import Supervisor
from kafka_share_eos.proving_ground.verify.targets import RunContext, Target

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster

# A handoff stalls an application's consumers past the broker's session timeout (3 s) and
# record lock (4 s), and the others keep polling through it rather than ending their drain.
HANDOFF_STALL_S = 8.0
HANDOFF_IDLE_MS = 12_000


@dataclass
class RunEnvironment:
    """What runs share: the broker, the Postgres server, a working directory, the object store."""

    broker: VerifyBroker
    work: Path
    postgres: PostgresDatabases | None = None
    slow_sink_seconds: float = 0.0
    spark: SparkCluster | None = None
    """The Spark standalone cluster the pipelines of a worker fault's runs use."""
    store: RunStore | None = None
    """The object store the pipelines journal on (None: in their directories)."""


def execute(spec: RunSpec, env: RunEnvironment) -> RunResult:
    """Carry out one run and score it."""
    started = time.monotonic()
    target = TARGETS[spec.target]()
    outage = OUTAGES.get(spec.point)
    connect = spec.point in CONNECT_POINTS
    with _database(env, target) as postgres_url, connect_server(connect) as server:
        topic = f"verify-{uuid.uuid4().hex[:12]}"
        # The run's topic is unique, so its paths on the store never meet another run's.
        ctx = RunContext(
            env.work / spec.key, postgres_url, env.broker.bootstrap_servers, topic,
            store_root=env.store.root(topic) if env.store is not None else None,
            storage_options=env.store.storage_options() if env.store is not None else None,
        )
        # A run cut short by an interrupted verifier left its directory behind, unrecorded.
        shutil.rmtree(ctx.run_dir, ignore_errors=True)
        ctx.run_dir.mkdir(parents=True)
        env.broker.create_topic(topic, spec.partitions)
        env.broker.prepare_group(topic)
        planned = plan_records(spec.records, spec.rng_seed, spec.mix.bad_records)
        produced = produce(env.broker.bootstrap_servers, topic, planned, spec.partitions)
        target.setup(ctx, planned)
        # Created once here: two pipelines creating an SQL table at the same moment would race.
        ctx.dead_letters().close()
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
            store_root=ctx.store_root,
            spark_remote=server.url if server is not None else None,
        )
        config.save(ctx.run_dir / "config.json")
        supervisor = Supervisor(
            spec, config, ctx, target, produced,
            env.store.environment() if env.store is not None else {},
            None if server is None else ConnectCrashes(server, ctx.run_dir, spec.point,
                                                       target.hold_point),
        )
        with contextlib.ExitStack() as stack:
            dropper = (
                stack.enter_context(SessionDropper(env.broker.bootstrap_servers, spec.rng_seed))
                if spec.mix.session_drops
                else None
            )
            driver = None
            if outage is not None:
                scene = Scene(
                    env.broker.kafka() if outage.needs_kafka else None, topic, topic,
                    ctx.run_dir, spark=env.spark,
                    postgres=env.postgres if isinstance(env.postgres, PostgresServer) else None,
                    delta_tables=[ctx.path(name) for name in target.delta_tables],
                    store=env.store,
                )
                driver = FaultDriver(
                    outage(), scene, supervisor.gate, target.hold_point,
                    lambda: supervisor.progress_lines("a"),
                ).start()
                stack.callback(driver.stop)
                supervisor.restored = driver.wait_restored
            result = supervisor.run()
        if driver is not None:
            stall = (None if driver.struck_at is None
                     else stall_seconds(applied_times(supervisor.progress_lines()),
                                        driver.struck_at))
            result.fault = driver.report(stall)
            result.error = result.error or driver.error
        result.session_drops = dropper.drops if dropper is not None else 0
        journals = read_journals({name: config.journal(name) for name in supervisor.names},
                                 env.store)
        result.consumers = journals["a"].consumers
        result.members = {
            f"{name}/{member}": records
            for name, journal in journals.items()
            for member, records in journal.members.items()
        }
        result.score = score(target.landed(ctx, produced), produced, supervisor.dead_lettered())
        result.seconds = time.monotonic() - started
        return result


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
