"""The README's pipeline with ``.option("consumers", "4")`` and
``.option("acknowledge", "afterJournal")``: the work spreads over four executor-side members,
and the Postgres table ends up with every order once, also when the whole pipeline is killed
with SIGKILL halfway and started again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.paths import SHARED
from helpers.readme_pipeline import LOCK_MS, SESSION_TIMEOUT_MS, orders

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.pipeline_status import journal_status

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.timeout(600)]

TOPIC, GROUP, PARTITIONS, ORDERS = "orders", "orders-eos", 8, 1600


def _start(bootstrap: str, postgres_url: str, work: Path, log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        # A session of its own: SIGKILL of the group takes the JVM and every Python worker too.
        return subprocess.Popen(
            [sys.executable, "-m", "helpers.readme_pipeline", bootstrap, TOPIC, GROUP,
             postgres_url, str(work)],
            cwd=SHARED, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _most_members_in_one_batch(journal: Path) -> int:
    """The most consumers that polled the slots of one micro-batch: each slot's report names
    the consumer that polled it."""
    return max(
        len({entry["member"] for entry in batch.consumers})
        for batch in journal_status(str(journal)).batches
    )


def test_readme_pipeline_with_four_consumers_applies_every_order_once_across_a_kill(
    postgres_url: str, tmp_path: Path
) -> None:
    engine = sa.create_engine(postgres_url)
    log = tmp_path / "pipeline.log"
    with EmbeddedBroker(record_lock_duration_ms=LOCK_MS, session_timeout_ms=SESSION_TIMEOUT_MS,
                        heartbeat_interval_ms=500) as broker:
        broker.create_topic(TOPIC, PARTITIONS)
        values = [b'{"order_id": %d}' % i for i in range(ORDERS)]
        produced = produce(broker.bootstrap_servers, TOPIC, values, partitions=PARTITIONS)
        expected = sorted(
            (partition, offset, values[offset * PARTITIONS + partition])
            for partition, offset in produced
        )

        first = _start(broker.bootstrap_servers, postgres_url, tmp_path, log)
        deadline = time.monotonic() + 300
        while not 0 < len(orders(engine)) < ORDERS:
            assert first.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no batch was applied within 300 s"
            time.sleep(0.1)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()

        second = _start(broker.bootstrap_servers, postgres_url, tmp_path, log)
        assert second.wait(300) == 0, log.read_text()[-3000:]
    landed = orders(engine)
    engine.dispose()

    assert landed == expected
    # local[4]: a batch's four slots poll at once, in four Python workers, as four members.
    assert _most_members_in_one_batch(tmp_path / "journal") == 4
    slots = journal_status(str(tmp_path / "journal")).consumers
    assert [slot["slot"] for slot in slots if slot["records"]] == [0, 1, 2, 3], slots
