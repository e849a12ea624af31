"""Other writers on a pipeline's Delta table: what they committed, and when to try again.

Maintenance runs on production tables while pipelines write: OPTIMIZE rewrites small files,
VACUUM deletes the files compaction replaced, other jobs append. A toolkit writer that decided
what to write from a snapshot finds, when it commits, that someone else got in first
(``CommitFailedError``), or, when it reads, that a file its snapshot lists was vacuumed. Both are
retried on a fresh snapshot (the decision is taken again, so no identity is written twice);
when the retries run out, the error names the commits that won, read from the table's history.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.location import DeltaLocation

# delta-rs and pyarrow say a data file is gone with this (FileNotFoundError from a pyarrow
# dataset, ArrowInvalid from a scan, DeltaError from a MERGE; deltalake 1.6.6).
_GONE = ("Object at location", "not found")

_HISTORY_READS = 3
# How far back an error message looks for the commits that won: the first of them are the ones
# an attempt lost to.
_HISTORY_DEPTH = 50


@dataclass(frozen=True)
class OtherCommit:
    """One commit of the table's history: its version and operation (``WRITE``, ``MERGE``,
    ``OPTIMIZE``, ``VACUUM START``…)."""

    version: int
    operation: str

    def __str__(self) -> str:
        return f"version {self.version} ({self.operation})"


def file_vanished(error: BaseException) -> bool:
    """Whether ``error`` is a read of a data file that is no longer there: a VACUUM deleted a
    file the snapshot being read still lists. A fresh snapshot no longer lists it."""
    if isinstance(error, FileNotFoundError):
        return True
    text = str(error)
    return all(part in text for part in _GONE)


def lost_to_others(error: BaseException) -> bool:
    """Whether ``error`` means another writer changed the table under this attempt (a commit
    race lost, or a vacuumed file read), so that an attempt on a fresh snapshot may succeed."""
    return isinstance(error, deltalake.exceptions.CommitFailedError) or file_vanished(error)


def commits_since(
    location: DeltaLocation, version: int | None, limit: int = 5
) -> list[OtherCommit]:
    """The first ``limit`` commits after ``version``, oldest first (None: the table's last
    ``limit``), read from the table's history.

    delta-rs lists the newest commit infos in the store but numbers them down from the handle's
    version (deltalake 1.6.6), so a commit landing in between shifts every number: the history
    is read again until the table stood still while it was read.
    """
    for _ in range(_HISTORY_READS):
        table = location.open()
        if table is None:
            return []
        newest = table.version()
        depth = limit if version is None else min(newest - version, _HISTORY_DEPTH)
        entries = table.history(limit=max(depth, 1))
        table.update_incremental()
        if table.version() == newest:
            break
    commits = (OtherCommit(int(e["version"]), str(e.get("operation", "?"))) for e in entries)
    ordered = sorted((c for c in commits if version is None or c.version > version),
                     key=lambda commit: commit.version)
    return ordered[-limit:] if version is None else ordered[:limit]


def describe_winners(
    location: DeltaLocation, version: int | None, error: BaseException | None = None
) -> str:
    """For an error message: the version the last attempt read (None: it read none) and the
    commits since, which won over it; or, when ``error`` is a file gone with no commit since,
    that the table lost a file its latest version lists (no attempt can succeed)."""
    commits = commits_since(location, version)
    read = "" if version is None else f"the last attempt read version {version}; "
    if not commits:
        if error is not None and file_vanished(error):
            return read + (
                "no commit since, yet a data file that version lists is missing: the table "
                "lost it (a VACUUM with full=True and a retention shorter than a commit takes, "
                "or files deleted by hand), and every read of it fails until it is restored"
            )
        return read + "no commit found since"
    since = "commits since" if version is not None else "the table's last commits"
    return read + f"{since}: " + ", ".join(map(str, commits))
