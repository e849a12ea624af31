"""``kafka-share-eos verify`` stopped by SIGTERM or Ctrl-C leaves nothing running: its pipelines,
the PostgreSQL server and the broker it started are gone when it exits, however far it got."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.processes import (
    ctrl_c_at_its_default,
    group_members,
    port_open,
    processes_mentioning,
    wait_until,
)
from helpers.processes import server_temp as own_server_temp

from kafka_share_eos.proving_ground.launchers.postgres import POSTGRES_URL_ENV

pytestmark = pytest.mark.timeout(400)

STOPS = {
    "sigterm": lambda verifier: verifier.send_signal(signal.SIGTERM),
    # A terminal's Ctrl-C reaches the whole foreground process group.
    "ctrl-c": lambda verifier: os.killpg(verifier.pid, signal.SIGINT),
}
EXIT_CODES = {"sigterm": 128 + signal.SIGTERM, "ctrl-c": 128 + signal.SIGINT}


@pytest.fixture
def server_temp() -> Iterator[Path]:
    """A temp directory of this test's own for the verifier's server."""
    with own_server_temp("kse-verify-stop-") as path:
        yield path


@pytest.mark.parametrize("moment", ["mid-run", "while-postgres-starts"])
@pytest.mark.parametrize("stop", list(STOPS))
def test_a_stopped_verifier_leaves_no_server_behind(
    tmp_path: Path, server_temp: Path, stop: str, moment: str
) -> None:
    temp, work, output = server_temp, tmp_path / "work", tmp_path / "verify.log"
    env = {key: value for key, value in os.environ.items() if key != POSTGRES_URL_ENV}
    env["TMPDIR"] = str(temp)  # the throwaway server's directory lands here
    with output.open("w") as out:
        verifier = subprocess.Popen(
            [sys.executable, "-m", "kafka_share_eos.cli.main", "verify",
             "--strategy", "upsert-postgres", "--crash-points", "sink.mid_write",
             "--workdir", str(work)],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, preexec_fn=ctrl_c_at_its_default,
        )
    try:
        if moment == "while-postgres-starts":
            wait_until(lambda: any(temp.glob("kse-postgres-*")), 120, "the server's directory")
            broker = postgres = None
            pipelines = []
        else:
            started = wait_until(
                lambda: re.search(r"broker at (\S+), PostgreSQL at (\S+),", output.read_text()),
                180, "the verifier's start line",
            )
            broker, postgres = started.group(1), started.group(2)
            assert port_open(broker) and port_open(postgres)
            pipelines = wait_until(lambda: processes_mentioning(f"verify.pipeline {work}"), 120,
                                   "the first pipeline process")
            wait_until(lambda: "java" in group_members(pipelines[0]).values(), 120,
                       "the first pipeline's Spark JVM")
        STOPS[stop](verifier)
        verifier.wait(timeout=60)
    finally:
        if verifier.poll() is None:  # failed already: leave nothing behind all the same
            os.killpg(verifier.pid, signal.SIGKILL)
            verifier.wait()
            for pipeline in processes_mentioning(f"verify.pipeline {work}"):
                os.killpg(pipeline, signal.SIGKILL)

    log = output.read_text()
    assert verifier.returncode == EXIT_CODES[stop], log
    assert "Traceback" not in log, log
    # No postmaster, pipeline, Spark driver or worker of this run is left, nor the server's files.
    assert processes_mentioning(str(temp)) == [], log
    assert processes_mentioning(str(work)) == [], log
    assert list(temp.glob("kse-postgres-*")) == [], log
    for address in (broker, postgres):
        assert address is None or not port_open(address), address
    # A pipeline is a process group (driver, JVM, source runner, workers): the JVM may take a
    # moment to die of its SIGKILL.
    wait_until(lambda: not any(map(group_members, pipelines)), 30, f"process groups {pipelines}")
