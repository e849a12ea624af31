"""Finding processes: the children of a process, the members of a process group, the processes
whose command line names something, and whether a process still runs.

Tests, the verifier and the benchmarks look for the processes Spark and Kafka start (a source
runner, executor workers, a broker's JVM) to wait for them, stop them or measure them. psutil
reads them from the operating system; a process may exit while it is read, and then counts as
gone.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import psutil

_EXITED = (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs: it exists and is no zombie (a zombie has exited, only its
    parent has not reaped it yet)."""
    try:
        return psutil.Process(pid).status() not in _EXITED
    except psutil.NoSuchProcess:
        return False


def live_processes(
    *, parent: int | None = None, group: int | None = None
) -> Iterator[psutil.Process]:
    """The processes that have not exited, each with ``info`` holding its ``ppid``, ``cmdline``
    and ``name``: all of them, or only the children of ``parent`` and the members of process
    group ``group`` when given."""
    for process in psutil.process_iter(["ppid", "status", "cmdline", "name"]):
        if process.info["status"] in _EXITED:
            continue
        if parent is not None and process.info["ppid"] != parent:
            continue
        if group is not None and _group_of(process.pid) != group:
            continue
        yield process


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None  # exited meanwhile


def processes_mentioning(
    *texts: str, parent: int | None = None, group: int | None = None
) -> list[int]:
    """Pids of the :func:`live_processes` (with the same ``parent`` and ``group``) whose command
    line, its arguments joined by spaces, contains one of ``texts``."""
    return [process.pid for process in live_processes(parent=parent, group=group)
            if any(text in _joined(process.info["cmdline"]) for text in texts)]


def command_line(pid: int) -> str:
    """The command line of process ``pid``, its arguments joined by spaces ("" once it has
    exited)."""
    try:
        return _joined(psutil.Process(pid).cmdline())
    except psutil.NoSuchProcess:
        return ""


def _joined(arguments: list[str] | None) -> str:
    # None: psutil could not read them, the process having exited while it was listed.
    return " ".join(arguments or ())


def children_by_parent() -> dict[int, list[int]]:
    """Every process's children, by the parent's pid; zombies included, as their CPU time is in
    no parent's reaped children yet."""
    children: dict[int, list[int]] = {}
    for process in psutil.process_iter(["ppid"]):
        children.setdefault(process.info["ppid"], []).append(process.pid)
    return children


def descendants(root: int) -> list[int]:
    """``root`` and the pids of all its descendants, parents before their children."""
    children = children_by_parent()
    found, pending = [root], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found
