"""CPU time of the Spark driver's side of a local application, read from ``/proc`` (Linux).

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

import os
from pathlib import Path

EXECUTOR_MAIN_CLASS = "CoarseGrainedExecutorBackend"

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def _stat_fields(pid: int) -> list[str]:
    # The command name may hold spaces and parentheses: the fields after its ")" do not.
    return (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1]).split()


def _own_ticks(fields: list[str]) -> int:
    # utime and stime are fields 14 and 15 of stat(5); the list starts at field 3.
    return int(fields[11]) + int(fields[12])


def _reaped_children_ticks(fields: list[str]) -> int:
    # cutime and cstime: CPU of children that exited and were waited for.
    return int(fields[13]) + int(fields[14])


def process_seconds(pid: int) -> float:
    """CPU seconds of process ``pid`` itself (all its threads, none of its children).

    Raises:
        ProcessLookupError: no process ``pid``.
    """
    try:
        return _own_ticks(_stat_fields(pid)) / _TICKS_PER_SECOND
    except FileNotFoundError as exc:
        raise ProcessLookupError(pid) from exc


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int(_stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
            tree.setdefault(parent, []).append(int(entry.name))
    return tree


def _is_executor(pid: int) -> bool:
    try:
        return EXECUTOR_MAIN_CLASS in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
    except OSError:
        return False


def tree_seconds_without_executors(root: int) -> float:
    """CPU seconds of ``root`` and its descendants, children they reaped included, leaving out
    every executor JVM with everything below it.

    Raises:
        ProcessLookupError: no process ``root``.
    """
    tree = _children()
    ticks, stack = 0, [root]
    while stack:
        pid = stack.pop()
        try:
            fields = _stat_fields(pid)
        except OSError:
            if pid == root:
                raise ProcessLookupError(root) from None
            continue  # exited since the listing: its time is in its parent's reaped children
        ticks += _own_ticks(fields) + _reaped_children_ticks(fields)
        stack.extend(child for child in tree.get(pid, ()) if not _is_executor(child))
    return ticks / _TICKS_PER_SECOND


def driver_seconds(driver_python: int, driver_jvm: int) -> float:
    """Driver CPU seconds so far (see the module docstring).

    Raises:
        ProcessLookupError: either process is gone.
    """
    return process_seconds(driver_python) + tree_seconds_without_executors(driver_jvm)
