"""``kafka-share-eos broker`` run as a real process: reachable, stoppable, strict about input."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest
from helpers import consume, count_at_least, produce, share_consumer
from helpers.scripts import CLI, CLI_ENV

pytestmark = pytest.mark.timeout(90)



def _wait_for_file(path: Path, process: subprocess.Popen[str], timeout: float = 30) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            return path.read_text().strip()
        if process.poll() is not None:
            raise AssertionError(f"broker exited early with {process.returncode}")
        time.sleep(0.05)
    raise AssertionError(f"broker wrote no address to {path} within {timeout} s")


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=["term", "int"])
def test_broker_serves_share_groups_and_stops_cleanly(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    addr_file = tmp_path / "broker.addr"
    process = subprocess.Popen(
        [CLI, "broker", "--topic", "jobs:4", "--lock-ms", "5000", "--max-deliveries", "5",
         "--addr-file", str(addr_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=CLI_ENV,
    )
    try:
        bootstrap = _wait_for_file(addr_file, process)
        values = [b"job-%d" % i for i in range(8)]
        written = produce(bootstrap, "jobs", values, partitions=4)
        with share_consumer(bootstrap, "cli-test", ["jobs"]) as consumer:
            deliveries = consume(consumer, until=count_at_least(len(values)), timeout=30)
    finally:
        process.send_signal(stop_signal)
        stdout, stderr = process.communicate(timeout=30)

    assert process.returncode == 0, stderr
    assert stdout.strip() == bootstrap
    assert {partition for partition, _ in written} == {0, 1, 2, 3}
    assert sorted(d.value for d in deliveries) == values
    assert "embedded broker stopped" in stderr


def test_bad_topic_spec_exits_with_usage_error(tmp_path: Path) -> None:
    addr_file = tmp_path / "broker.addr"
    result = subprocess.run(
        [CLI, "broker", "--topic", "jobs:4", "--topic", "bad topic:2",
         "--addr-file", str(addr_file)],
        capture_output=True, text=True, env=CLI_ENV, timeout=60,
    )
    assert result.returncode == 2
    assert "'bad topic:2'" in result.stderr
    assert "--topic" in result.stderr
    assert not addr_file.exists()


def test_an_offset_reset_kafka_cannot_apply_is_refused_before_anything_starts() -> None:
    result = subprocess.run(
        [CLI, "broker", "--kafka", "--topic", "jobs", "--offset-reset", "earliest"],
        capture_output=True, text=True, env=CLI_ENV, timeout=60,
    )
    assert result.returncode == 2
    assert "--offset-reset" in result.stderr and "--group" in result.stderr
    assert "starting Apache Kafka" not in result.stderr
