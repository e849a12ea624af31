"""CPU time of the Spark driver's side of a local application.

*Driver CPU* is the user and system CPU of:

- the driver's Python process itself (the one that built the ``SparkSession``), not its
  children;
- the driver JVM and every process it started other than executors, with their own reaped
  children: the Python source runner of each streaming query and the Python workers that plan
  data-source reads;

and not of executor JVMs (``CoarseGrainedExecutorBackend``) nor anything they started (the
Python workers that run tasks). Run Spark with ``local-cluster[...]`` so that executors are
processes of their own; in ``local[N]`` mode tasks run on threads of the driver JVM and would
be counted.
"""

from __future__ import annotations

import psutil

from kafka_share_eos.proving_ground.launchers.processes import children_by_parent, command_line

EXECUTOR_MAIN_CLASS = "CoarseGrainedExecutorBackend"


def process_seconds(pid: int) -> float:
    """CPU seconds of process ``pid`` itself (all its threads, none of its children).

    Raises:
        ProcessLookupError: no process ``pid``.
    """
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess as exc:
        raise ProcessLookupError(pid) from exc
    return times.user + times.system


def _is_executor(pid: int) -> bool:
    return EXECUTOR_MAIN_CLASS in command_line(pid)


def tree_seconds_without_executors(root: int) -> float:
    """CPU seconds of ``root`` and its descendants, children they reaped included, leaving out
    every executor JVM with everything below it.

    Raises:
        ProcessLookupError: no process ``root``.
    """
    tree = children_by_parent()
    seconds, stack = 0.0, [root]
    while stack:
        pid = stack.pop()
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            if pid == root:
                raise ProcessLookupError(root) from None
            continue  # exited since the listing: its time is in its parent's reaped children
        # children_*: CPU of children that exited and were waited for.
        seconds += times.user + times.system + times.children_user + times.children_system
        stack.extend(child for child in tree.get(pid, ()) if not _is_executor(child))
    return seconds


def driver_seconds(driver_python: int, driver_jvm: int) -> float:
    """Driver CPU seconds so far (see the module docstring).

    Raises:
        ProcessLookupError: either process is gone.
    """
    return process_seconds(driver_python) + tree_seconds_without_executors(driver_jvm)
