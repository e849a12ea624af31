"""The source benchmark gives the embedded broker's serving thread a core of its own: the thread
runs there alone, the rest of the process and the processes it starts run on the other cores,
and everything may use every core again afterwards."""

from __future__ import annotations

import os
import subprocess
import sys

from kafka_share_eos.bench.cores import SERVING_THREAD, _threads, broker_on_own_core
from kafka_share_eos.sharegroup import EmbeddedBroker


def _child_cores() -> set[int]:
    out = subprocess.run(
        [sys.executable, "-c", "import os; print(*sorted(os.sched_getaffinity(0)))"],
        check=True, capture_output=True, text=True,
    ).stdout
    return {int(cpu) for cpu in out.split()}


def test_the_serving_thread_runs_alone_on_its_core_until_the_block_ends() -> None:
    usable = os.sched_getaffinity(0)
    with EmbeddedBroker(topics=["cores:1"]), broker_on_own_core() as core:
        threads = _threads()
        serving = [tid for tid, name in threads.items() if name == SERVING_THREAD]
        if len(usable) < 2:
            assert core is None
        else:
            assert core == min(usable)
            others = usable - {core}
            assert serving
            assert all(os.sched_getaffinity(tid) == {core} for tid in serving)
            assert all(os.sched_getaffinity(tid) == others
                       for tid in threads if tid not in serving)
            assert _child_cores() == others
    assert all(os.sched_getaffinity(tid) == usable for tid in _threads())
    assert _child_cores() == usable


def test_without_a_broker_it_says_so() -> None:
    # In a process of its own: another test's broker may be serving in this one.
    code = (
        "from kafka_share_eos.bench.cores import broker_on_own_core\n"
        "with broker_on_own_core() as core:\n"
        "    print(core)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if len(os.sched_getaffinity(0)) < 2:
        assert done.stdout.strip() == "None"
    else:
        assert done.returncode != 0
        assert f"no thread named {SERVING_THREAD!r} runs" in done.stderr
