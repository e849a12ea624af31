"""Leases on record locks: until when records a stopped run's consumers held may stay locked.

A consumer that dies without leaving the share group (kill -9 of the pipeline, a lost executor)
leaves the records it acquired locked on the broker until their lock expires
(``lockDurationMs``), and stays a member, keeping its partitions from the others, until the
group's session timeout drops it (``sessionTimeoutMs``). A drain (``trigger(availableNow=True)``)
started right after would find the group empty and end while those records are still to come
back. So every consumer of a
query keeps a lease under ``<journalPath>/_leases`` before it polls: "this consumer, of run R,
polls until T" (wall-clock time, renewed while it polls). Closing the consumer deletes it.

A later run reads the leases of other runs: their records were acquired before ``min(T, now)``,
so they are within reach again by ``min(T, now) + max(lockDurationMs, sessionTimeoutMs)``, and
the drain does not end before. The wait is therefore bounded by the longer of the two. Leases
past that are deleted.

Consumers of another run whose process is still alive on this host are not dead: an executor's
Python worker reused by the next query of the same application keeps its share session and
hands out what it fetched, so its lease is not waited for; a source runner of a query stopped a
moment ago is still leaving the group (it RELEASEs what it holds and deletes its lease), and
until it has left the group keeps part of the partitions from the new member, so a drain first
waits for it to go.

The executor consumers' leases also tell a drain which members are in the group
(:meth:`Leases.members_in_group`): a member that did not poll lately (a Python worker that got no
slot) keeps its partitions from the others, so a drain ends only once each one polled empty.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
import uuid
from typing import Any

import pyarrow.fs as pafs

from kafka_share_eos import formats
from kafka_share_eos.errors import JournalError
from kafka_share_eos.storage import Location, as_location, delete_if_present, write_atomically

log = logging.getLogger("kafka_share_eos.source")

LEASES_DIR = "_leases"
LEASE_S = 10.0
"""How far ahead a lease reaches: one small write per consumer every few seconds of polling."""
_RENEW_MARGIN_S = LEASE_S / 2


RUNNER = "runner"
EXECUTOR = "executor"
_DEPARTURE_CHECK_S = 0.05


class Lease:
    """The lease of one consumer.

    Args:
        leases: the journal's leases.
        kind: :data:`RUNNER` (the source runner's consumer) or :data:`EXECUTOR` (a slot
            consumer in an executor's Python worker).
    """

    def __init__(self, leases: Leases, kind: str) -> None:
        self._leases = leases
        self._kind = kind
        self.member = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        self._name = f"{self.member}.json"
        self._run = ""
        self._until = 0.0

    def renew(self, run: str, polling_for_s: float) -> None:
        """Before a poll of up to ``polling_for_s`` seconds for run ``run``: make sure the
        lease covers it.

        Raises:
            JournalError: the lease could not be written (a full disk, no permission).
        """
        now = time.time()
        if run == self._run and now + polling_for_s + _RENEW_MARGIN_S <= self._until:
            return
        until = now + polling_for_s + LEASE_S
        fs, root = self._leases.directory()
        lease = {formats.FIELD: formats.LEASE, "run": run, "until": until, "kind": self._kind,
                 "host": socket.gethostname(), "pid": os.getpid()}
        path = f"{root}/{self._name}"
        try:
            write_atomically(fs, path, json.dumps(lease).encode())
        except OSError as error:
            # On a full journal disk this small write may be the first to fail, and the OS
            # error alone names no file. A lease is written before a poll, when nothing is held.
            raise JournalError(
                f"could not write lease {path} in the journal's directory: {error}; nothing "
                "was polled for it: free space on the journal's storage (or make it "
                "writable) and restart the query"
            ) from error
        self._run, self._until = run, until

    def release(self) -> None:
        """The consumer left the group, handing its records back: nothing to wait for."""
        if self._until:
            with contextlib.suppress(OSError):
                fs, root = self._leases.directory()
                delete_if_present(fs, f"{root}/{self._name}")
            self._until = 0.0


class Leases:
    """The leases of the consumers of the journal at ``journal``, under ``<journal>/_leases``."""

    def __init__(self, journal: str | Location) -> None:
        self._where = as_location(journal).child(LEASES_DIR)

    def directory(self) -> tuple[pafs.FileSystem, str]:
        """The leases' filesystem and directory, created when missing."""
        return self._where.open(create=True)

    def lease(self, kind: str) -> Lease:
        """A new lease for one consumer of ``kind`` (:data:`RUNNER` or :data:`EXECUTOR`)."""
        return Lease(self, kind)

    def present(self) -> list[str]:
        """The :attr:`Lease.member` names of every lease there, running or not."""
        fs, root = self.directory()
        return [info.base_name.removesuffix(".json")
                for info in fs.get_file_info(pafs.FileSelector(root))
                if info.base_name.endswith(".json")]

    def _all(self) -> list[tuple[str, dict[str, Any]]]:
        fs, root = self.directory()
        found = []
        for info in fs.get_file_info(pafs.FileSelector(root)):
            if not info.base_name.endswith(".json"):
                continue
            try:
                with fs.open_input_stream(info.path) as source:
                    lease = json.loads(source.read())
            except (OSError, ValueError):
                continue  # released meanwhile, or being replaced
            # A lease of a newer release cannot be weighed: its consumer may still hold records.
            formats.check_format("lease", lease.get(formats.FIELD), formats.LEASE, info.path)
            found.append((info.path, lease))
        return found

    def _of_other_runs(self, run: str) -> list[tuple[str, dict[str, Any]]]:
        return [(path, lease) for path, lease in self._all() if lease.get("run") != run]

    def members_in_group(self) -> list[str]:
        """The :attr:`Lease.member` names of this journal's executor consumers that may still
        be members of the share group: alive on this host, or on another host with a lease
        still running (a member whose process died is the dead-lease wait's business)."""
        now = time.time()

        def may_be_member(lease: dict[str, Any]) -> bool:
            if lease.get("host") == socket.gethostname():
                return _alive_here(lease)
            return float(lease.get("until", 0.0)) > now

        return [
            path.rsplit("/", 1)[-1].removesuffix(".json")
            for path, lease in self._all()
            if lease.get("kind") == EXECUTOR and may_be_member(lease)
        ]

    def _departing(self, run: str) -> bool:
        return any(
            lease.get("kind") == RUNNER and _alive_here(lease)
            for _, lease in self._of_other_runs(run)
        )

    def locks_of_other_runs_expire_at(self, run: str, hold_ms: int) -> float:
        """The wall-clock time by which every record a dead consumer of another run than
        ``run`` held is within reach again, ``hold_ms`` after its last poll (0 when none may
        still be held); deletes the leases that are past it."""
        now = time.time()
        latest = 0.0
        fs, _ = self.directory()
        for path, lease in self._of_other_runs(run):
            if lease.get("kind") == EXECUTOR and _alive_here(lease):
                continue
            unlocked_at = min(float(lease["until"]), now) + hold_ms / 1000.0
            if unlocked_at <= now:
                with contextlib.suppress(OSError):
                    delete_if_present(fs, path)
                continue
            latest = max(latest, unlocked_at)
        return latest

    def drain_waits_until(self, run: str, hold_ms: int) -> float:
        """When a drain of run ``run`` starts: wait (at most ``hold_ms``) for source runners
        of other runs still leaving the group on this host, then
        :meth:`locks_of_other_runs_expire_at`, logged when the drain has to wait for it."""
        deadline = time.monotonic() + hold_ms / 1000.0
        while self._departing(run) and time.monotonic() < deadline:
            time.sleep(_DEPARTURE_CHECK_S)
        unlocked_at = self.locks_of_other_runs_expire_at(run, hold_ms)
        if unlocked_at > time.time():
            log_wait(unlocked_at)
        return unlocked_at


def _alive_here(lease: dict[str, Any]) -> bool:
    pid = lease.get("pid")
    if lease.get("host") != socket.gethostname() or not isinstance(pid, int):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # A killed process nobody reaped yet is a zombie: its consumer is gone.
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def log_wait(unlocked_at: float) -> None:
    """Say why a drain does not end yet."""
    log.warning(
        "kafka-share source: a consumer of a previous run of this query stopped without leaving "
        "the share group; the records it held come back once their lock expires and the group "
        "drops it (max of lockDurationMs and sessionTimeoutMs), so the drain waits %.1f s more "
        "for them before it can end",
        max(0.0, unlocked_at - time.time()),
    )
