"""A drain started right after a kill -9 completes in one run: it waits out the record locks
the dead consumers held (records the broker hands out again only once those locks expire).

On Apache Kafka the pipeline is told a lock ten times shorter than its group's: the source reads
the group's real lock through the admin API, or the drain would end before the records are back.
With executor consumers, the journal may be on an object store (S3, Azure Blob) instead of the
local disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import obstore
import pytest

from kafka_share_eos import EmbeddedBroker, faults
from kafka_share_eos.proving_ground.launchers.azurite import AzuriteServer
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.pipeline import PipelineConfig
from kafka_share_eos.proving_ground.verify.process import Exit, PipelineProcess
from kafka_share_eos.proving_ground.verify.records import plan_records, produce
from kafka_share_eos.proving_ground.verify.score import score
from kafka_share_eos.proving_ground.verify.targets import RunContext, dead_lettered
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    HEARTBEAT_INTERVAL,
    ISOLATION_LEVEL,
    LOCK_DURATION,
    SESSION_TIMEOUT,
)

pytestmark = pytest.mark.timeout(600)

# Much longer than the drain's idle time and the group's session timeout: without waiting for
# the dead consumers' locks, the restarted drain would end before their records come back.
RECORD_LOCK_MS = 20_000
SESSION_TIMEOUT_MS = 4000
IDLE_MS = 2000


@contextlib.contextmanager
def share_group(
    kind: str, request: pytest.FixtureRequest, topic: str, lock_ms: int = RECORD_LOCK_MS,
) -> Iterator[str]:
    """A broker with ``topic`` (3 partitions) and share group ``drain`` timed as above; yields
    its bootstrap servers."""
    if kind == "kafka":
        kafka = request.getfixturevalue("kafka_cluster")
        kafka.create_topic(topic, 3)
        kafka.set_group_config("drain-" + topic, {
            AUTO_OFFSET_RESET: "earliest", ISOLATION_LEVEL: "read_committed",
            LOCK_DURATION: lock_ms, SESSION_TIMEOUT: SESSION_TIMEOUT_MS,
            HEARTBEAT_INTERVAL: 500,
        })
        yield kafka.bootstrap_servers
        return
    with EmbeddedBroker(
        record_lock_duration_ms=lock_ms, session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=500,
    ) as broker:
        broker.create_topic(topic, 3)
        yield broker.bootstrap_servers


CASES = [
    pytest.param("embedded", 1, faults.AFTER_JOURNAL, True, id="runner-consumer"),
    pytest.param("embedded", 3, faults.SLOT_AFTER_SEGMENT, True, id="three-executor-consumers"),
    pytest.param("embedded", 3, faults.SLOT_AFTER_SEGMENT, False, id="lost-executor"),
    pytest.param("kafka", 1, faults.AFTER_JOURNAL, True, id="kafka-runner-consumer",
                 marks=pytest.mark.kafka),
    pytest.param("kafka", 3, faults.SLOT_AFTER_SEGMENT, True, id="kafka-three-executor-consumers",
                 marks=(pytest.mark.kafka, pytest.mark.full)),
]

# Under afterJournal the runner's pump polls 10 records at a time into batches of 15, so its
# second poll is journaled as the first batch's last 5 records and the next batch's first 5,
# then ACCEPTed once (hits of the journal write: 1 the first poll, 2 and 3 that poll's halves).
PER_TRIGGER, POLL_RECORDS = 15, 10
# Not a drain test: a lock just past the session timeout keeps the drain's wait short.
CROSSING_LOCK_MS = SESSION_TIMEOUT_MS + 1000
CROSSING_CASES = [
    pytest.param(faults.crash_spec(faults.AFTER_JOURNAL, 2), id="first-batch-ended-mid-poll"),
    pytest.param(faults.crash_spec(faults.AFTER_JOURNAL, 3), id="next-batch-begun-mid-poll"),
    pytest.param(faults.crash_spec(faults.DURING_ACK, 2), id="crossing-poll-half-accepted"),
]


@pytest.mark.parametrize(("broker", "consumers", "crash_at", "whole_pipeline"), CASES)
def test_one_drain_after_a_kill_applies_every_record_once(
    tmp_path: Path, request: pytest.FixtureRequest, broker: str, consumers: int, crash_at: str,
    whole_pipeline: bool,
) -> None:
    """kill -9 of the whole pipeline mid-batch, or of one executor's Python worker only (a
    lost executor: the task fails, the query with it, and the driver stops cleanly)."""
    acknowledge = "afterJournal" if consumers > 1 else "afterCommit"
    crash_and_drain(tmp_path, request, broker, consumers, acknowledge, crash_at, whole_pipeline)


@pytest.mark.parametrize("server", ["s3_server", "azurite_server"])
def test_executor_consumers_journaling_on_an_object_store_drain_every_record_once(
    tmp_path: Path, request: pytest.FixtureRequest, server: str,
) -> None:
    """The three-executor-consumers case with every durable path on S3 or Azure Blob: the
    journal (segments and leases created first-writer-wins by conditional put), the dedup
    ledger, the Delta target, the dead letters and, on S3, Spark's checkpoint (s3a)."""
    store = request.getfixturevalue(server)
    crash_and_drain(tmp_path, request, "embedded", 3, "afterJournal", faults.SLOT_AFTER_SEGMENT,
                    True, store=store)


@pytest.mark.full
@pytest.mark.parametrize("crash_at", CROSSING_CASES)
def test_a_kill_inside_a_poll_crossing_batches_applies_every_record_once(
    tmp_path: Path, request: pytest.FixtureRequest, crash_at: str,
) -> None:
    """kill -9 of the whole pipeline while the afterJournal pump journals or ACCEPTs a poll
    that ends one batch and begins the next."""
    crash_and_drain(tmp_path, request, "embedded", 1, "afterJournal", crash_at, True,
                    max_poll_records=POLL_RECORDS, lock_ms=CROSSING_LOCK_MS)


@pytest.mark.kafka
@pytest.mark.full
def test_a_kill_while_a_poll_is_carried_into_later_batches_applies_every_record_once(
    tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    """kill -9 on Apache Kafka at the second slot segment a worker writes: with producer
    batches of 20 records a partition and slots' shares of 5, a first poll brings a whole
    batch, and that segment is the first of the parts it carries into the next batches,
    nothing of the poll ACCEPTed yet. The replay reads what was carried, the broker
    redelivers the whole poll, the strategy absorbs the repeats."""
    crash_and_drain(tmp_path, request, "kafka", 3, "afterJournal",
                    faults.crash_spec(faults.SLOT_AFTER_SEGMENT, 2), True, producer_batch=60)


def crash_and_drain(
    tmp_path: Path, request: pytest.FixtureRequest, broker: str, consumers: int,
    acknowledge: str, crash_at: str, whole_pipeline: bool, max_poll_records: int | None = None,
    lock_ms: int = RECORD_LOCK_MS, store: S3Server | AzuriteServer | None = None,
    producer_batch: int = 1,
) -> None:
    """Run the pipeline until ``crash_at`` kills it, drain the group with a second run, and
    find every record applied once; with ``store``, the journal is there (its settings in the
    pipeline's environment); records are produced ``producer_batch`` at a time."""
    topic = f"payments-{tmp_path.name[-12:]}".replace("_", "-")
    with share_group(broker, request, topic, lock_ms) as bootstrap_servers:
        planned = plan_records(60, "drain-after-crash", bad_records=False)
        produced = produce(bootstrap_servers, topic, planned, 3, producer_batch)
        ctx = RunContext(tmp_path / "run",
                         store_root=store.url(topic) if store is not None else None,
                         storage_options=store.storage_options() if store is not None else None)
        ctx.run_dir.mkdir()
        # On a store, a target whose every path can live there: a Delta ledger and table.
        target = TARGETS["dedup-delta" if store is not None else "upsert-sqlite"]()
        target.setup(ctx, planned)
        ctx.dead_letters().close()
        config = PipelineConfig(
            target=target.name, run_dir=str(ctx.run_dir),
            bootstrap_servers=bootstrap_servers, topic=topic, group_id="drain-" + topic,
            max_records_per_trigger=PER_TRIGGER, max_poll_records=max_poll_records,
            idle_ms=IDLE_MS, consumers=consumers, acknowledge=acknowledge,
            # Kafka's group says 20 s; the source must believe the group, not the option.
            lock_duration_ms=lock_ms // (10 if broker == "kafka" else 1),
            session_timeout_ms=SESSION_TIMEOUT_MS,
            store_root=ctx.store_root,
        )
        config_path = ctx.run_dir / "config.json"
        config.save(config_path)
        log, record = ctx.run_dir / "a.log", ctx.run_dir / "crashes.log"

        # Without a process group to kill, the crash point kills only the process hitting it.
        only_it = {} if whole_pipeline else {faults.CRASH_PGID_ENV: ""}
        store_env = store.environment() if store is not None else {}
        crashed = PipelineProcess(config_path, "a", log, crash_at, record,
                                  {**only_it, **store_env}).wait(300)
        assert crashed is Exit.CRASHED, log.read_text()[-3000:]
        drained = PipelineProcess(config_path, "a", log, None, record, store_env).wait(300)
        assert drained is Exit.DRAINED, log.read_text()[-3000:]
        if store is not None:
            # Every durable path was on the store; on S3 the Spark checkpoint too (s3a).
            local = {path.name for path in config.pipeline_dir("a").iterdir()}
            on_s3 = isinstance(store, S3Server)
            assert local & {"journal", "checkpoint"} == ({"checkpoint"} if not on_s3 else set())
            assert not {"ledger", "effects-delta", "dead-letters"} & {
                path.name for path in ctx.run_dir.iterdir()}
            stored = {entry["path"].split("/")[1 if "pipeline-a" not in entry["path"] else 2]
                      for page in obstore.list(store.obstore_store(), topic) for entry in page}
            assert {"journal", "ledger", "effects-delta"} <= stored, stored
            assert ("checkpoint" in stored) is on_s3, stored

        counted = score(target.landed(ctx, produced), produced, dead_lettered(ctx))
        # No loss proves the drain waited for the killed consumer's locks when they were still
        # held as it started (it says "the drain waits" then); on a loaded machine the restart
        # may begin after they expired, and nothing is left to wait for.
        assert (counted.records, counted.duplicates, counted.losses) == (60, 0, 0), counted
