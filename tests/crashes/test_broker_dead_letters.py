"""kill -9 between a strategy's refusal and the acknowledgement that REJECTs the record.

The pipeline of tests/deadletter/test_broker.py runs as a process group of its own and a
crash point kills it whole: in the driver once the first batch's letters are recorded and its
good records applied, before Spark commits the batch; in the source runner once the batch
committed, before its acknowledgements; or halfway through them (half the batch REJECTed or
ACCEPTed and committed). A second run drains the group. Every record is then either applied
once or in the group's DLQ topic once: the refusal survived in the journal's rejections, so
the records the broker delivered again were REJECTed, not ACCEPTed, and a record REJECTed
before the kill was archived once and never delivered again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers.broker_dead_letters import (
    applied_offsets,
    check_dead_letter_queue,
    create_topics,
    produce_orders,
)
from helpers.paths import SHARED

from kafka_share_eos import faults
from kafka_share_eos.sharegroup.group_config import (
    AUTO_OFFSET_RESET,
    HEARTBEAT_INTERVAL,
    LOCK_DURATION,
    SESSION_TIMEOUT,
)

pytestmark = [pytest.mark.spark, pytest.mark.kafka, pytest.mark.full, pytest.mark.timeout(600)]

# Longer than a batch takes on a loaded machine, short enough for the drain to wait it out.
LOCK_MS, SESSION_MS = 10_000, 4000


def run(config_path: Path, log: Path, crash_at: str | None, record: Path) -> int:
    env = {key: value for key, value in os.environ.items()
           if key not in (faults.CRASH_AT_ENV, faults.CRASH_PGID_ENV)}
    env[faults.CRASH_RECORD_ENV] = str(record)
    if crash_at is not None:
        env[faults.CRASH_AT_ENV] = crash_at
    with log.open("ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "helpers.broker_dead_letters", str(config_path)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=SHARED,
            start_new_session=True,
        )
        try:
            return process.wait(timeout=400)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, 9)


@pytest.mark.parametrize("crash_at", [
    pytest.param(faults.STRATEGY_AFTER_WRITE, id="driver-after-refusal"),
    pytest.param(faults.BEFORE_ACK, id="runner-before-reject"),
    pytest.param(faults.DURING_ACK, id="runner-half-acknowledged"),
])
def test_a_kill_between_refusal_and_reject_leaves_each_letter_once_in_the_dlq(
    kafka_cluster: Any, tmp_path: Path, crash_at: str,
) -> None:
    topic = f"orders-{tmp_path.name[-10:]}".replace("_", "-")
    config = {"bootstrap_servers": kafka_cluster.bootstrap_servers, "topic": topic,
              "group": "g-" + topic, "dlq": create_topics(kafka_cluster, topic),
              "journal": str(tmp_path / "journal"), "url": f"sqlite:///{tmp_path / 'o.db'}",
              "checkpoint": str(tmp_path / "checkpoint")}
    kafka_cluster.set_group_config(config["group"], {
        AUTO_OFFSET_RESET: "earliest", LOCK_DURATION: LOCK_MS, SESSION_TIMEOUT: SESSION_MS,
        HEARTBEAT_INTERVAL: 500,
    })
    good, bad = produce_orders(config["bootstrap_servers"], topic)
    config_path, log, record = tmp_path / "config.json", tmp_path / "run.log", tmp_path / "crashes"
    config_path.write_text(json.dumps(config))

    assert run(config_path, log, crash_at, record) == -9, log.read_text()[-3000:]
    assert record.read_text().startswith(crash_at + "@1"), record.read_text()
    assert run(config_path, log, None, record) == 0, log.read_text()[-3000:]

    assert applied_offsets(config["url"]) == sorted(good)
    check_dead_letter_queue(config, bad)
