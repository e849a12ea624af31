"""``bench``, ``demo`` and the examples stopped by SIGTERM or Ctrl-C leave nothing running.

Each command runs as a process group of its own, with a temp directory of its own (where a
throwaway PostgreSQL server and an Apache Kafka node keep their files, so their processes
name it). It is stopped once the server, broker or Spark JVM of the moment is up: it must say
so in one line, exit with 143 (SIGTERM) or 130 (Ctrl-C), and leave no process of its group, no
server and no server files behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers.processes import (
    ctrl_c_at_its_default,
    group_members,
    processes_mentioning,
    server_temp,
    wait_until,
)

from kafka_share_eos.proving_ground.launchers.postgres import POSTGRES_URL_ENV

pytestmark = [pytest.mark.spark, pytest.mark.timeout(400)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
STOPS = {
    "sigterm": (lambda pid: os.kill(pid, signal.SIGTERM), 128 + signal.SIGTERM,
                "stopped by SIGTERM"),
    # A terminal's Ctrl-C reaches the whole foreground process group.
    "ctrl-c": (lambda pid: os.killpg(pid, signal.SIGINT), 128 + signal.SIGINT, "interrupted"),
}


def _postgres_up(temp: Path, pid: int) -> bool:
    return bool(processes_mentioning(f"-D {temp}/"))


def _kafka_and_spark_up(temp: Path, pid: int) -> bool:
    return bool(processes_mentioning(f"{temp}/kse-kafka-")) and _spark_up(temp, pid)


def _spark_up(temp: Path, pid: int) -> bool:
    return bool(set(processes_mentioning("SparkSubmit")) & set(group_members(pid)))


@dataclass(frozen=True)
class Run:
    """A command, and the moment it is stopped at."""

    args: list[str]
    moment: Callable[[Path, int], bool]
    what: str


RUNS = {
    "bench-postgres": Run(["-m", "kafka_share_eos.cli.main", "bench", "--quick",
                           "--only", "upsert"], _postgres_up, "its PostgreSQL server"),
    "bench-kafka": Run(["-m", "kafka_share_eos.cli.main", "bench", "--quick",
                        "--only", "kafka-topic"], _kafka_and_spark_up,
                       "its Kafka node and Spark"),
    "demo": Run(["-m", "kafka_share_eos.cli.main", "demo"], _spark_up, "Spark"),
    "account-balances": Run([str(EXAMPLES / "account_balances.py")], _postgres_up,
                            "its PostgreSQL server"),
    "kafka-to-kafka": Run([str(EXAMPLES / "kafka_to_kafka.py")], _spark_up, "Spark"),
}
# The others run with `./dev test` (marker `full`): CI keeps one server and one JVM case.
IN_CI = {("bench-postgres", "sigterm"), ("demo", "ctrl-c")}


@pytest.fixture
def own_temp() -> Iterator[Path]:
    """A temp directory of this test's own for the command's servers."""
    with server_temp("kse-stop-") as path:
        yield path


def _cases() -> list[object]:
    return [
        pytest.param(name, stop, id=f"{name}-{stop}",
                     marks=() if (name, stop) in IN_CI else pytest.mark.full)
        for name in RUNS for stop in STOPS
    ]


@pytest.mark.parametrize(("name", "stop"), _cases())
def test_a_stopped_command_says_so_in_one_line_and_leaves_nothing_running(
    name: str, stop: str, own_temp: Path, tmp_path: Path
) -> None:
    run = RUNS[name]
    send, status, said = STOPS[stop]
    env = {key: value for key, value in os.environ.items() if key != POSTGRES_URL_ENV}
    env["TMPDIR"] = str(own_temp)
    output = tmp_path / "output.log"
    with output.open("w") as out:
        command = subprocess.Popen(
            [sys.executable, *run.args], stdin=subprocess.DEVNULL, stdout=out,
            stderr=subprocess.STDOUT, env=env, cwd=tmp_path, start_new_session=True,
            preexec_fn=ctrl_c_at_its_default,
        )
    try:
        wait_until(lambda: run.moment(own_temp, command.pid) or command.poll() is not None,
                   240, run.what)
        assert command.poll() is None, output.read_text()
        send(command.pid)
        command.wait(timeout=60)
    finally:
        if command.poll() is None:  # failed already: leave nothing behind all the same
            os.killpg(command.pid, signal.SIGKILL)
            command.wait()

    text = output.read_text()
    assert command.returncode == status, text
    lines = text.strip().splitlines()
    assert said in lines[-1], text
    assert [line for line in lines if said in line] == [lines[-1]], text
    assert "Traceback" not in text and "\tat " not in text, text
    # The JVMs may take a moment to die once their parent is gone.
    wait_until(lambda: not group_members(command.pid), 30, f"process group {command.pid}")
    wait_until(lambda: not processes_mentioning(str(own_temp)), 30, "the servers to stop")
    assert list(own_temp.glob("kse-postgres-*")) == [], text
    assert list(own_temp.glob("kse-kafka-*")) == [], text
