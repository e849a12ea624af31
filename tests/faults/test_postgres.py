"""PostgreSQL crashes or loses a reply mid-batch while a real pipeline runs (Spark local, the
embedded broker, the verifier's pipeline process), and the restart applies every record once.

The pipeline reaches a durable server (``PostgresServer(durable=True)``: fsync, synchronous
commit and full-page writes on) through a Toxiproxy proxy, with a password in its URL. It is
held at a named point (``KSE_HOLD_AT``) while the test strikes: SIGKILL of every server process
(a power cut, restarted on the same data directory) or a cut that lets the COMMIT through and
throws its answer away (the client cannot know whether it committed; the rows stored, or the
prepared transaction gone, prove the server acted on it). The batch then fails with
:class:`DatabaseUnavailableError` naming the database without the password, and a restart on
the same checkpoint applies every record exactly once, with no prepared transaction left.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import accounts
from helpers.applications import HoldGate

from kafka_share_eos import EmbeddedBroker, faults
from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy, Toxiproxy
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.pipeline import PROGRESS_FILE, PipelineConfig
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess
from kafka_share_eos.proving_ground.verify.records import plan_records, produce
from kafka_share_eos.proving_ground.verify.score import score
from kafka_share_eos.proving_ground.verify.table_targets import EFFECTS_TABLE
from kafka_share_eos.proving_ground.verify.targets import RunContext, dead_lettered

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(600)]

PASSWORD = "kse-never-shown-4711"
RECORDS = 240
# At least the upsert's bulk_threshold (100): the first batch takes the COPY path.
PER_TRIGGER = 120
LOCK_MS = 5000
SESSION_TIMEOUT_MS = 4000
IDLE_MS = 2000
PIPELINE_TIMEOUT_S = 300


@pytest.fixture(scope="module")
def durable_server() -> Iterator[PostgresServer]:
    """A server of these tests alone, since they kill it."""
    with PostgresServer(durable=True) as server:
        yield server


@dataclass
class Scene:
    """A test's database on the durable server, the proxy the pipeline reaches it through, and
    the broker."""

    server: PostgresServer
    proxy: Proxy
    broker: EmbeddedBroker
    database: str


@pytest.fixture
def scene(durable_server: PostgresServer, toxiproxy: Toxiproxy) -> Iterator[Scene]:
    database = durable_server.create_database()
    proxy = toxiproxy.proxy(f"127.0.0.1:{durable_server.port}")
    with EmbeddedBroker(record_lock_duration_ms=LOCK_MS, session_timeout_ms=SESSION_TIMEOUT_MS,
                        heartbeat_interval_ms=500) as broker:
        yield Scene(durable_server, proxy, broker, database)
    proxy.delete()
    # A test that failed halfway leaves the server as the next test needs it.
    if durable_server.killed:
        durable_server.restart()
    durable_server.drop_database(str(sa.make_url(database).database))


Strike = Callable[[Scene], None]


def kill_server(scene: Scene) -> None:
    scene.server.kill()


def kill_and_restart_server(scene: Scene) -> None:
    scene.server.kill()
    scene.server.restart()


def lose_the_commit_reply(scene: Scene) -> None:
    scene.proxy.cut("lose_replies")


def prepared_transactions(url: str) -> int:
    """Transactions left prepared on the whole server."""
    return len(accounts.prepared_gids(url))


def stored_amounts(url: str) -> dict[tuple[int, int], int]:
    """``(partition, offset) -> amount`` of every row the upsert's table holds."""
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        query = sa.text(f'SELECT "partition", "offset", amount FROM {EFFECTS_TABLE}')
        stored = {(int(p), int(o)): int(a) for p, o, a in conn.execute(query)}
    engine.dispose()
    return stored


class Run:
    """A topic of :data:`RECORDS` records, a run directory and the pipeline's configuration."""

    def __init__(self, tmp_path: Path, scene: Scene, target: str) -> None:
        topic = f"pg-faults-{tmp_path.name[-12:]}".replace("_", "-")
        scene.broker.create_topic(topic, 3)
        self.planned = plan_records(RECORDS, "postgres-faults", bad_records=False)
        self.produced = produce(scene.broker.bootstrap_servers, topic, self.planned, 3)
        self.database = scene.database
        self.ctx = RunContext(tmp_path / "run", scene.database)
        self.ctx.run_dir.mkdir()
        self.target = TARGETS[target]()
        self.target.setup(self.ctx, self.planned)
        self.ctx.dead_letters().close()
        # The pipeline goes through the proxy, with a password the server (trust) ignores.
        self.pipeline_url = sa.make_url(scene.database).set(
            password=PASSWORD, port=scene.proxy.port
        ).render_as_string(hide_password=False)
        self.config = PipelineConfig(
            target=target, run_dir=str(self.ctx.run_dir),
            bootstrap_servers=scene.broker.bootstrap_servers, topic=topic,
            group_id="pg-" + topic, postgres_url=self.pipeline_url,
            max_records_per_trigger=PER_TRIGGER, idle_ms=IDLE_MS, lock_duration_ms=LOCK_MS,
            session_timeout_ms=SESSION_TIMEOUT_MS,
        )
        self.config_path = self.ctx.run_dir / "config.json"
        self.config.save(self.config_path)
        self.runs = 0

    def start(self, env: dict[str, str] | None = None) -> tuple[PipelineProcess, Path]:
        self.runs += 1
        log = self.ctx.run_dir / f"run-{self.runs}.log"
        process = PipelineProcess(self.config_path, "a", log, None,
                                  self.ctx.run_dir / "crashes.log", env)
        return process, log

    def held_batch(self) -> list[tuple[int, int]]:
        """The records of the first batch, the one held."""
        progress = self.config.pipeline_dir("a") / PROGRESS_FILE
        lines = [json.loads(line) for line in progress.read_text().splitlines()]
        return [(p, o) for p, o in next(line for line in lines if line.get("started"))["records"]]

    def fails_naming_the_database(self, process: PipelineProcess, log: Path) -> None:
        """``process`` ends failed by the error of a lost database (a connection lost, or one
        that never opened once the database was gone), which shows the URL without the
        password."""
        ended = process.wait(PIPELINE_TIMEOUT_S)
        text = log.read_text(errors="replace")
        assert ended is Exit.FAILED, text[-3000:]
        assert re.search(r"Database(Unavailable|Unreachable)Error", text), text[-3000:]
        assert sa.make_url(self.pipeline_url).render_as_string(hide_password=True) in text
        assert PASSWORD not in text

    def strike_while_held(self, tmp_path: Path, scene: Scene, point: str, strike: Strike) -> None:
        """Run the pipeline until held at ``point``, strike, let it go on: it must fail."""
        gate = HoldGate(tmp_path / "gate", point)
        process, log = self.start(gate.env)
        held, _ = faults.gate_files(gate.directory, point)
        deadline = time.monotonic() + PIPELINE_TIMEOUT_S
        while not held.exists():
            assert process.running, f"exited before {point}: {log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"never held at {point}"
            time.sleep(0.05)
        strike(scene)
        gate.release()
        self.fails_naming_the_database(process, log)

    def drains_exactly_once(self) -> None:
        """A restart on the same checkpoint drains the group, every record applied once and no
        transaction left prepared."""
        process, log = self.start()
        ended = process.wait(PIPELINE_TIMEOUT_S)
        assert ended is Exit.DRAINED, log.read_text(errors="replace")[-3000:]
        counted = score(self.target.landed(self.ctx, self.produced), self.produced,
                        dead_lettered(self.ctx))
        # A lost connection is no fault of the rows: none is dead-lettered.
        assert (counted.records, counted.duplicates, counted.losses, counted.dead_lettered) == (
            RECORDS, 0, 0, 0
        ), counted
        assert prepared_transactions(self.database) == 0


# Three runs of the pipeline (about 115 s on an idle 2-core machine): left to the full tier.
@pytest.mark.full
def test_upsert_server_killed_inside_the_copy_and_down_for_a_whole_run(
    tmp_path: Path, scene: Scene
) -> None:
    """SIGKILL after the COPY, before the COMMIT: nothing of the batch is stored. A restart
    while the server is still down fails at once, naming it; once it is back, one restart
    applies every record once."""
    run = Run(tmp_path, scene, "upsert-postgres")
    run.strike_while_held(tmp_path, scene, faults.SINK_MID_WRITE, kill_server)
    assert len(run.held_batch()) >= 100  # bulk_threshold: the batch took the COPY path
    process, log = run.start()
    run.fails_naming_the_database(process, log)
    scene.server.restart()
    assert stored_amounts(scene.database) == {}
    run.drains_exactly_once()
    assert stored_amounts(scene.database) == {
        coordinates: record.amount for coordinates, record in run.produced.items()
    }


def test_upsert_commit_whose_reply_is_lost(tmp_path: Path, scene: Scene) -> None:
    """The COMMIT reaches the server, its answer never reaches the pipeline: the batch is
    stored, the pipeline cannot know it, and the restart finds its rows applied."""
    run = Run(tmp_path, scene, "upsert-postgres")
    run.strike_while_held(tmp_path, scene, faults.SINK_MID_WRITE, lose_the_commit_reply)
    scene.proxy.heal()
    assert sorted(stored_amounts(scene.database)) == sorted(run.held_batch())
    run.drains_exactly_once()
    assert stored_amounts(scene.database) == {
        coordinates: record.amount for coordinates, record in run.produced.items()
    }


def test_two_phase_server_killed_between_prepare_and_commit_prepared(
    tmp_path: Path, scene: Scene
) -> None:
    """SIGKILL and restart of the server with the batch prepared and not yet decided: the
    prepared transaction survives the crash (durable server), the COMMIT PREPARED of the
    decided batch fails on the lost connection, and the restart's recovery commits it."""
    run = Run(tmp_path, scene, "two-phase")
    run.strike_while_held(tmp_path, scene, faults.TWO_PHASE_AFTER_PREPARE,
                          kill_and_restart_server)
    assert prepared_transactions(scene.database) == 1
    run.drains_exactly_once()


def test_two_phase_commit_prepared_whose_reply_is_lost(tmp_path: Path, scene: Scene) -> None:
    """COMMIT PREPARED reaches the server, its answer does not: the Postgres part committed,
    the Delta part waits under its logged decision, and the restart completes it once."""
    run = Run(tmp_path, scene, "two-phase")
    run.strike_while_held(tmp_path, scene, faults.TWO_PHASE_AFTER_DECISION,
                          lose_the_commit_reply)
    scene.proxy.heal()
    assert prepared_transactions(scene.database) == 0
    run.drains_exactly_once()
