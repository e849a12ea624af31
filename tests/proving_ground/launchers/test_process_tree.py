"""The launcher thread: a child started from a thread that ended lives on, and dies with the
process that started it."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.processes import wait_until

from kafka_share_eos.proving_ground.launchers.process_tree import launch
from kafka_share_eos.proving_ground.launchers.processes import alive

# The child starts a sleeper from a thread that ends at once, says the sleeper's pid once the
# kernel has ended the thread, and waits to be killed.
PARENT = """
import os, subprocess, sys, threading, time
from kafka_share_eos.proving_ground.launchers.process_tree import launch
started = []
def start():
    started.append(threading.get_native_id())
    started.append(launch([sys.executable, "-c", "import time; time.sleep(300)"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
thread = threading.Thread(target=start)
thread.start()
thread.join()
# join() returns before the kernel is done with the thread: wait until it is gone.
while os.path.exists(f"/proc/self/task/{started[0]}"):
    time.sleep(0.01)
print(started[1].pid, flush=True)
time.sleep(300)
"""


def test_a_child_outlives_the_thread_that_started_it_and_dies_with_its_process() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        sleeper = int(parent.stdout.readline())
        # The starting thread has ended: under a plain Popen the sleeper would be dead by now.
        assert alive(sleeper), "the sleeper died with the thread that started it"
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        wait_until(lambda: not alive(sleeper), 60, "the sleeper to die with the process that "
                   "started it")
    finally:
        parent.kill()
        parent.wait()


def test_the_process_is_returned_and_a_failed_start_is_raised_to_the_caller(
    tmp_path: Path,
) -> None:
    process = launch([sys.executable, "-c", "print('hi')"], stdout=subprocess.PIPE, text=True)
    assert process.communicate()[0] == "hi\n"
    with pytest.raises(FileNotFoundError):
        launch([str(tmp_path / "no-such-program")])
    with pytest.raises(ValueError, match="preexec_fn"):
        launch(["true"], preexec_fn=lambda: None)
