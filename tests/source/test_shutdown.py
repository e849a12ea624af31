"""The source runner's SIGTERM hook against a real embedded broker, without Spark: a runner
stopped by SIGTERM releases or keeps what it must, leaves the group at once, and hands the
signal on to the handler installed before.

Each test runs its own broker: a client disconnecting drops every share session on the broker,
which would disturb a neighbour.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.planned_orders import (
    GROUP,
    RECORDS,
    TOPIC,
    assert_only_unjournaled_come_back,
    identities,
    redelivered,
)
from helpers.planning import broker_fixture

from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal

pytestmark = pytest.mark.timeout(90)


broker = broker_fixture(TOPIC, RECORDS)


RUNNER = """
import json, logging, signal, sys, time
from kafka_share_eos.journal import Journal
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.source.batch_planner import BatchPlanner

logging.basicConfig(level=logging.INFO, stream=sys.stderr)
signal.signal(signal.SIGTERM, lambda *_: (print("previous handler", flush=True), sys.exit(3)))
options = SourceOptions.parse(json.loads(sys.argv[1]))
planner = BatchPlanner(options, Journal(options.journal_path))
print(planner.latest(0, None), flush=True)
while True:
    time.sleep(0.1)
"""


def test_sigterm_releases_the_uncommitted_batch_and_chains(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    raw = {
        "kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.share.group.id": GROUP,
        "subscribe": TOPIC, "journalPath": str(tmp_path), "kafka.max.poll.records": "1000",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", RUNNER, json.dumps(raw)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "1"
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 3
    assert "previous handler" in out
    held = {(p, o) for _, p, o in identities(Journal(str(tmp_path)), [1])}
    assert f"released={len(held)}" in err
    back = redelivered(broker, 10)
    assert len(back) == RECORDS
    assert all((count == 2) == ((p, o) in held) for p, o, count in back)


def test_sigterm_stops_the_pump_before_closing_and_chains(
    broker: EmbeddedBroker, tmp_path: Path
) -> None:
    raw = {
        "kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.share.group.id": GROUP,
        "subscribe": TOPIC, "journalPath": str(tmp_path), "acknowledge": "afterJournal",
        "maxRecordsPerTrigger": "20", "kafka.max.poll.records": "10",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", RUNNER.replace("latest(0, None)", "latest(0, 20)"),
         json.dumps(raw)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    assert child.stdout is not None
    assert int(child.stdout.readline()) >= 1
    time.sleep(1.0)  # the pump polls the next batch ahead meanwhile
    child.send_signal(signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert child.returncode == 3, err
    assert "previous handler" in out
    journal = Journal(str(tmp_path))
    journaled = {(p, o) for _, p, o in identities(journal, journal.sequences())}
    assert len(journaled) > 20
    assert_only_unjournaled_come_back(broker, journaled)


DRAINING_RUNNER = RUNNER.replace(
    """print(planner.latest(0, None), flush=True)
while True:
    time.sleep(0.1)
""",
    """planner.drain()
start = 0
while True:
    start = planner.latest(start, None)
    print(start, planner.stats.accepted, flush=True)
""",
)
# The replacement must have taken: RUNNER unchanged would plan once and sleep.
assert DRAINING_RUNNER != RUNNER


def test_sigterm_ends_a_drains_idle_wait_at_once(broker: EmbeddedBroker, tmp_path: Path) -> None:
    # Spark stops a query by SIGTERMing its runner, which may be waiting out availableNowIdleMs
    # for records that will not come: it must leave the group now, not when the wait ends.
    raw = {
        "kafka.bootstrap.servers": broker.bootstrap_servers, "kafka.share.group.id": GROUP,
        "subscribe": TOPIC, "journalPath": str(tmp_path), "acknowledge": "afterJournal",
        "availableNowIdleMs": "600000", "kafka.max.poll.records": "10",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", DRAINING_RUNNER, json.dumps(raw)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy(),
    )
    assert child.stdout is not None
    accepted = 0
    while accepted < RECORDS:
        line = child.stdout.readline()
        assert line, child.communicate(timeout=30)[1]
        accepted = int(line.split()[1])
    time.sleep(1.0)  # the next planning now waits for records that will not come
    child.send_signal(signal.SIGTERM)
    try:
        out, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 3, err
    assert "previous handler" in out
    assert f"accepted={RECORDS}" in err
    assert redelivered(broker, 3) == []
