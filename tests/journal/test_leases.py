"""Leases on record locks under ``<journal>/_leases``: written before a poll and renewed only
when they run short, deleted on release; a later run waits for the locks of dead consumers of
other runs, never for its own or for live executors, and counts the executors that may still be
members of the share group (no broker)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kafka_share_eos import formats
from kafka_share_eos.errors import JournalError
from kafka_share_eos.journal.leases import EXECUTOR, LEASE_S, LEASES_DIR, RUNNER, Leases

HOUR_S = 3600.0


def lease_file(journal: Path, name: str, **fields: Any) -> Path:
    """A lease as a consumer of this or another host wrote it."""
    lease = {formats.FIELD: formats.LEASE, "host": socket.gethostname(), "pid": os.getpid(),
             **fields}
    path = journal / LEASES_DIR / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(lease))
    return path


def ended_pid() -> int:
    """The pid of a process that has exited and been reaped."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_renewed_lease_says_who_polls_until_when(tmp_path: Path) -> None:
    leases = Leases(str(tmp_path))
    lease = leases.lease(EXECUTOR)
    before = time.time()
    lease.renew("run-a", 2.0)
    path = tmp_path / LEASES_DIR / f"{lease.member}.json"
    written = json.loads(path.read_text())
    assert written["run"] == "run-a" and written["kind"] == EXECUTOR
    assert (written["host"], written["pid"]) == (socket.gethostname(), os.getpid())
    assert written[formats.FIELD] == formats.LEASE
    assert before + 2.0 + LEASE_S <= written["until"] <= time.time() + 2.0 + LEASE_S
    assert lease.member.startswith(f"{os.getpid()}-")
    assert leases.present() == [lease.member]


def test_a_lease_is_rewritten_only_when_it_runs_short_or_the_run_changes(
    tmp_path: Path,
) -> None:
    lease = Leases(str(tmp_path)).lease(RUNNER)
    path = tmp_path / LEASES_DIR / f"{lease.member}.json"
    lease.renew("run-a", 1.0)
    first = json.loads(path.read_text())["until"]
    lease.renew("run-a", 1.0)
    assert json.loads(path.read_text())["until"] == first
    # A poll longer than what the lease still covers (with its margin) pushes it out.
    lease.renew("run-a", LEASE_S)
    assert json.loads(path.read_text())["until"] > first
    lease.renew("run-b", 1.0)
    assert json.loads(path.read_text())["run"] == "run-b"


def test_a_released_lease_is_gone_and_a_lease_never_written_has_nothing_to_delete(
    tmp_path: Path,
) -> None:
    leases = Leases(str(tmp_path))
    kept, released, unused = (leases.lease(RUNNER) for _ in range(3))
    kept.renew("run-a", 1.0)
    released.renew("run-a", 1.0)
    assert sorted(leases.present()) == sorted([kept.member, released.member])
    released.release()
    released.release()
    unused.release()
    assert leases.present() == [kept.member]
    # Only the leases' own files are theirs.
    (tmp_path / LEASES_DIR / ".tmp-partial").write_bytes(b"{")
    assert leases.present() == [kept.member]


def test_a_lease_that_cannot_be_written_names_its_path(tmp_path: Path) -> None:
    lease = Leases(str(tmp_path)).lease(RUNNER)
    (tmp_path / LEASES_DIR / f"{lease.member}.json").mkdir(parents=True)
    with pytest.raises(JournalError, match=rf"could not write lease .*{lease.member}\.json"):
        lease.renew("run-a", 1.0)


def test_the_own_run_and_live_executors_are_never_waited_for(tmp_path: Path) -> None:
    leases = Leases(str(tmp_path))
    leases.lease(RUNNER).renew("run-a", 1.0)
    leases.lease(EXECUTOR).renew("run-old", 1.0)
    assert leases.locks_of_other_runs_expire_at("run-a", 30_000) == 0.0
    assert len(leases.present()) == 2


def test_a_dead_consumer_of_another_run_holds_its_locks_until_they_expire(
    tmp_path: Path,
) -> None:
    now = time.time()
    lease_file(tmp_path, "dead-runner", run="run-old", kind=RUNNER, until=now + 5,
               pid=ended_pid())
    lease_file(tmp_path, "dead-executor", run="run-old", kind=EXECUTOR, until=now - 1,
               pid=ended_pid())
    lease_file(tmp_path, "elsewhere", run="run-old", kind=EXECUTOR, until=now - 3,
               host="another-host")
    leases = Leases(str(tmp_path))
    expires = leases.locks_of_other_runs_expire_at("run-new", 20_000)
    # The latest of min(until, now) + hold: the runner's lease still runs, so it counts from now.
    assert now + 20 <= expires <= time.time() + 20
    assert sorted(leases.present()) == ["dead-executor", "dead-runner", "elsewhere"]


def test_leases_past_their_locks_are_deleted(tmp_path: Path) -> None:
    now = time.time()
    lease_file(tmp_path, "stale", run="run-old", kind=RUNNER, until=now - HOUR_S,
               pid=ended_pid())
    lease_file(tmp_path, "recent", run="run-old", kind=RUNNER, until=now - 10,
               pid=ended_pid())
    leases = Leases(str(tmp_path))
    assert leases.locks_of_other_runs_expire_at("run-new", 60_000) == pytest.approx(
        now - 10 + 60, abs=0.01)
    assert leases.present() == ["recent"]
    assert leases.locks_of_other_runs_expire_at("run-new", 1_000) == 0.0
    assert leases.present() == []


def test_unreadable_leases_are_passed_over(tmp_path: Path) -> None:
    lease_file(tmp_path, "ok", run="run-old", kind=RUNNER, until=time.time() - 1,
               pid=ended_pid())
    (tmp_path / LEASES_DIR / "torn.json").write_text('{"run": "run-o')
    leases = Leases(str(tmp_path))
    assert leases.locks_of_other_runs_expire_at("run-new", 60_000) > time.time()
    assert sorted(leases.present()) == ["ok", "torn"]


def test_members_in_group_are_live_executors_here_and_running_leases_elsewhere(
    tmp_path: Path,
) -> None:
    now = time.time()
    zombie = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # Exited but not reaped yet: a zombie, whose consumer is gone.
        os.waitid(os.P_PID, zombie.pid, os.WEXITED | os.WNOWAIT)
        lease_file(tmp_path, "live-here", run="r", kind=EXECUTOR, until=now - 1)
        lease_file(tmp_path, "runner-here", run="r", kind=RUNNER, until=now + 60)
        lease_file(tmp_path, "dead-here", run="r", kind=EXECUTOR, until=now + 60,
                   pid=ended_pid())
        lease_file(tmp_path, "zombie-here", run="r", kind=EXECUTOR, until=now + 60,
                   pid=zombie.pid)
        lease_file(tmp_path, "no-pid-here", run="r", kind=EXECUTOR, until=now + 60, pid="x")
        lease_file(tmp_path, "running-elsewhere", run="r", kind=EXECUTOR, until=now + 60,
                   host="another-host")
        lease_file(tmp_path, "ran-out-elsewhere", run="r", kind=EXECUTOR, until=now - 1,
                   host="another-host")
        members = Leases(str(tmp_path)).members_in_group()
    finally:
        zombie.wait()
    assert sorted(members) == ["live-here", "running-elsewhere"]


def test_a_drain_does_not_wait_when_no_dead_consumer_held_records(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    leases = Leases(str(tmp_path))
    leases.lease(RUNNER).renew("run-a", 1.0)
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        assert leases.drain_waits_until("run-a", 60_000) == 0.0
    assert caplog.records == []


def test_a_drain_waits_for_a_departing_runner_then_for_its_locks(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A runner of another run, alive on this host: still leaving the group.
    Leases(str(tmp_path)).lease(RUNNER).renew("run-old", 1.0)
    leases = Leases(str(tmp_path))
    started, started_at = time.monotonic(), time.time()
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        unlocked_at = leases.drain_waits_until("run-new", 300)
    # It waited the whole hold for the runner to go, then 0.3 s more for what it held.
    assert time.monotonic() - started >= 0.3
    assert unlocked_at >= started_at + 0.6
    [warning] = caplog.records
    assert "the drain waits 0." in warning.getMessage()


def test_a_drain_says_how_long_it_waits_for_a_dead_runner(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lease_file(tmp_path, "dead", run="run-old", kind=RUNNER, until=time.time() - 1,
               pid=ended_pid())
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.source"):
        unlocked_at = Leases(str(tmp_path)).drain_waits_until("run-new", 60_000)
    assert unlocked_at > time.time() + 50
    [warning] = caplog.records
    assert "stopped without leaving the share group" in warning.getMessage()
    assert "the drain waits 5" in warning.getMessage()
