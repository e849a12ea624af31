"""The README pipeline on a Spark standalone cluster (a master and two workers on loopback)
against Apache Kafka, with ``consumers=4`` and ``acknowledge=afterJournal``: one worker is
killed with its executors while their slots hold polled records, and every order still lands
once in PostgreSQL and the query finishes.

The killed slots' records were acquired by share consumers that died without a word: they come
back once their lock expires (or the dead members' sessions time out), and the ``availableNow``
drain goes on until they have. The journal is a local path both workers share (one machine).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.applications import HoldGate
from helpers.paths import SHARED
from helpers.readme_pipeline import LOCK_MS, SESSION_TIMEOUT_MS, orders

from kafka_share_eos.faults import SLOT_AFTER_POLL
from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    HEARTBEAT_INTERVAL,
    LOCK_DURATION,
    SESSION_TIMEOUT,
)

pytestmark = [pytest.mark.full, pytest.mark.spark, pytest.mark.kafka, pytest.mark.postgres,
              pytest.mark.timeout(900)]

TOPIC, GROUP, PARTITIONS, ORDERS = "orders", "orders-eos", 8, 1600


def test_a_worker_killed_mid_batch_loses_and_repeats_no_order(
    postgres_url: str, tmp_path: Path
) -> None:
    engine = sa.create_engine(postgres_url)
    log = tmp_path / "pipeline.log"
    gate = HoldGate(tmp_path / "gate", SLOT_AFTER_POLL)
    with KafkaCluster(topics=[f"{TOPIC}:{PARTITIONS}"]) as kafka, SparkCluster(workers=2) as spark:
        kafka.set_group_config(GROUP, {AUTO_OFFSET_RESET: "earliest", LOCK_DURATION: LOCK_MS,
                                       SESSION_TIMEOUT: SESSION_TIMEOUT_MS,
                                       HEARTBEAT_INTERVAL: 1000})
        values = [b'{"order_id": %d}' % i for i in range(ORDERS)]
        produced = produce(kafka.bootstrap_servers, TOPIC, values, partitions=PARTITIONS,
                           batch_records=20)
        expected = sorted((partition, offset, values[offset * PARTITIONS + partition])
                          for partition, offset in produced)
        with log.open("ab") as out:
            pipeline = subprocess.Popen(
                [sys.executable, "-m", "helpers.readme_pipeline", kafka.bootstrap_servers, TOPIC,
                 GROUP, postgres_url, str(tmp_path), spark.master_url, SLOT_AFTER_POLL],
                cwd=SHARED, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            )
        try:
            gate.wait_held(pipeline, timeout=300)
            # Both executors run two of the batch's four slots (each waits for the others at
            # the hold): worker 0's die with the records they polled.
            killed = spark.kill_worker(0)
            assert len(killed) >= 3, killed  # the worker, its executor, a Python worker
            gate.release()
            spark.restart_worker(0)
            assert pipeline.wait(600) == 0, log.read_text()[-3000:]
        finally:
            if pipeline.poll() is None:
                pipeline.kill()
    landed = orders(engine)
    engine.dispose()
    assert landed == expected
