"""A core of its own for the embedded broker's serving thread while a benchmark runs.

In production the brokers run on other machines than Spark. The embedded broker runs inside the
benchmark's process and serves every request from one thread, which a raw consumer loop keeps
busy about 95 % of its time; on a machine of few cores, whatever else runs takes turns with that
thread. Measured on 2 cores: during a Spark query (the JVM's compiler, task threads and the
Python worker on top of the source runner) the serving thread waited 1.4-2.5 s on the run queue
in a 37 s read, against 0.01 s during the raw loop's read. The ratio of the two then measured
where the processes happened to be scheduled, not the source. Pinning the serving thread to the
first core and everything else of the process, with the processes it starts later (Spark's JVM
and its Python workers inherit it), to the others gives each contender the same broker.

Linux only (``os.sched_setaffinity``); elsewhere, or with a single usable core, nothing is
pinned.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

SERVING_THREAD = "rdk:mock"
"""The name librdkafka gives the thread of a mock cluster (the embedded broker)."""


def _threads() -> dict[int, str]:
    names = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that just ended
            names[int(task.name)] = (task / "comm").read_text().strip()
    return names


def _pin(tid: int, cpus: set[int]) -> None:
    with contextlib.suppress(ProcessLookupError):  # a thread that just ended
        os.sched_setaffinity(tid, cpus)


@contextlib.contextmanager
def broker_on_own_core() -> Iterator[int | None]:
    """Pin the embedded broker's serving thread (started already) to one core and the rest of
    this process, and what it starts meanwhile, to the other cores; yield that core, or None
    when nothing could be pinned. On exit every thread of the process may use every core the
    process could use before.

    Raises:
        RuntimeError: no embedded broker's serving thread runs in this process.
    """
    if not hasattr(os, "sched_getaffinity"):
        yield None
        return
    usable = os.sched_getaffinity(0)
    if len(usable) < 2:
        yield None
        return
    threads = _threads()
    serving = [tid for tid, name in threads.items() if name == SERVING_THREAD]
    if not serving:
        raise RuntimeError(f"no thread named {SERVING_THREAD!r} runs: start the broker first")
    broker_core, *others = sorted(usable)
    try:
        for tid in threads:
            _pin(tid, {broker_core} if tid in serving else set(others))
        yield broker_core
    finally:
        for tid in _threads():
            _pin(tid, usable)
