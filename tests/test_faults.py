"""The crash hook: which hit kills, what is killed, and what the supervisor learns about it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.launchers.processes import alive

CHILD = """
import os, subprocess, sys
from kafka_share_eos import faults
grandchild = subprocess.Popen(
    [sys.executable, "-c", "import time; time.sleep(120)"],
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
)
print(grandchild.pid, flush=True)
os.environ[faults.CRASH_PGID_ENV] = str(os.getpgrp())
for hit in range(1, 5):
    faults.maybe_crash("other.point")
    faults.maybe_crash("verify.point")
    print("survived", hit, flush=True)
"""


def test_parse_crash_at() -> None:
    assert faults.parse_crash_at(" a , b@3,,c@1 ") == {"a": 1, "b": 3, "c": 1}
    assert faults.parse_crash_at("") == {}
    assert faults.crash_spec("a", 1) == "a"
    assert faults.crash_spec("a", 4) == "a@4"
    with pytest.raises(ValueError, match="'b@0'"):
        faults.parse_crash_at("a,b@0")
    with pytest.raises(ValueError, match="'b@x'"):
        faults.parse_crash_at("b@x")


def test_crash_points_lists_enabled_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(faults.CRASH_AT_ENV, "x,y@2")
    assert faults.crash_points() == frozenset({"x", "y"})


def _gone(pid: int, within: float = 10.0) -> bool:
    """Whether ``pid`` exited (reaped, or a zombie waiting for its new parent)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_nth_hit_kills_the_whole_process_group_and_is_recorded(tmp_path: Path) -> None:
    record = tmp_path / "crashes.log"
    env = {**os.environ, faults.CRASH_AT_ENV: "verify.point@3",
           faults.CRASH_RECORD_ENV: str(record)}
    child = subprocess.run(
        [sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, timeout=60,
        start_new_session=True, check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    grandchild, *survived = child.stdout.split("\n")
    assert [line for line in survived if line] == ["survived 1", "survived 2"]
    assert _gone(int(grandchild))
    assert record.read_text().startswith("verify.point@3 pid=")


def test_without_a_group_only_the_process_dies(tmp_path: Path) -> None:
    env = {**os.environ, faults.CRASH_AT_ENV: "verify.point"}
    env.pop(faults.CRASH_PGID_ENV, None)
    script = CHILD.replace("os.environ[faults.CRASH_PGID_ENV] = str(os.getpgrp())", "")
    child = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60,
        check=False,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr
    grandchild = int(child.stdout.split()[0])
    try:
        assert not _gone(grandchild, within=0.5)
    finally:
        os.kill(grandchild, signal.SIGKILL)


def test_nothing_happens_unless_enabled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(faults.CRASH_AT_ENV, raising=False)
    faults.maybe_crash("verify.point")
    monkeypatch.setenv(faults.CRASH_AT_ENV, "some.other.point")
    faults.maybe_crash("verify.point")
