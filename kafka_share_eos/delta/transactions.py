"""Appends to a Delta table that happen at most once per (application id, batch id).

A Delta commit can carry an application transaction ``(app_id, version)``; the table remembers the
highest version per application id. delta-rs records whatever version it is given and never refuses
a repeated or lower one, so the check "was this batch already committed?" is made here, right
before the append, against the snapshot that holds this process's own last commit (a failed
append makes the next check read the table afresh).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_share_eos._extras import DELTA
from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.types import check_delta_uri
from kafka_share_eos.errors import ConfigurationError

if TYPE_CHECKING:
    import pyarrow as pa

# A delta-rs handle kept open gets slower with every version it commits or catches up with
# (deltalake 1.6.6: a one-row append took 5 ms at the 1st commit through one handle and 37 ms at
# the 400th); a handle opened anew starts from the latest checkpoint (written every 100 commits
# by default) and is fast again. So a handle is reopened this many versions after its opening.
REOPEN_AFTER_VERSIONS = 100


@dataclass
class DeltaLocation:
    """Where a Delta table lives: a local path or any object-store URI delta-rs supports.

    ``storage_options`` are passed unchanged to delta-rs (credentials, endpoints, locking).
    The table handle is cached and refreshed incrementally, so the log is not replayed from the
    start on every batch. Raises :class:`~kafka_share_eos.errors.MissingExtraError` when
    deltalake is not installed.
    """

    uri: str
    storage_options: Mapping[str, str] | None = None
    _table: deltalake.DeltaTable | None = field(default=None, init=False, repr=False)
    _opened_at: int = field(default=0, init=False, repr=False)
    _contended: int = field(default=0, init=False, repr=False)
    # app_id -> (table version, batch id) of this process's last commit for that app_id.
    _own_commits: dict[str, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        # Every Delta ledger, append sink and dead-letter table starts here: fail at
        # construction, naming the extra, rather than at the first batch.
        DELTA.require("Delta tables")
        check_delta_uri(self.uri, "Delta table")

    def options(self) -> dict[str, str] | None:
        """The storage options as the plain dict delta-rs expects."""
        return dict(self.storage_options) if self.storage_options is not None else None

    def table(self, *, refresh: bool = True) -> deltalake.DeltaTable | None:
        """The table, or None while it does not exist yet.

        With ``refresh`` the handle first catches up with commits made since it was last read;
        without, it is the snapshot this process last saw or wrote (one log listing saved).
        """
        if self._worn():
            self._table = None  # reopened below, from the latest checkpoint
        if self._table is None:
            if not deltalake.DeltaTable.is_deltatable(self.uri, storage_options=self.options()):
                return None
            self._table = deltalake.DeltaTable(self.uri, storage_options=self.options())
            self._opened_at = self._table.version()
        elif refresh:
            self._table.update_incremental()
        return self._table

    def snapshot(self) -> deltalake.DeltaTable | None:
        """The table as this process last saw or wrote it; caught up with other writers'
        commits only for a while after :meth:`contended`.

        For writers whose commit fails when anything landed since their snapshot (and for
        checks of their own application's commits): a stale snapshot then costs a retry, not a
        mistake, and reading the log for every batch costs as much as a small batch's write.
        """
        if self._table is None or self._contended or self._worn():
            self._contended = max(self._contended - 1, 0)
            return self.table()
        return self._table

    def _worn(self) -> bool:
        """Whether the kept handle is :data:`REOPEN_AFTER_VERSIONS` past its opening."""
        return (
            self._table is not None
            and self._table.version() - self._opened_at >= REOPEN_AFTER_VERSIONS
        )

    def contended(self, batches: int = 16) -> None:
        """Another writer won a commit race: the next ``batches`` snapshots are refreshed."""
        self._contended = batches

    def forget(self) -> None:
        """Drop the cached handle, e.g. after another process rewrote the table."""
        self._table = None
        self._own_commits.clear()

    def transaction_version(self, table: deltalake.DeltaTable, app_id: str) -> int | None:
        """``table.transaction_version(app_id)``, known without reading the log (which costs
        more with every commit since the last checkpoint) while ``table`` is still at this
        process's last commit for ``app_id``."""
        own = self._own_commits.get(app_id)
        if own is not None and own[0] == table.version():
            return own[1]
        return table.transaction_version(app_id)

    def committed(self, table: deltalake.DeltaTable, app_id: str, batch_id: int) -> None:
        """Note that this process just committed ``(app_id, batch_id)`` through ``table``,
        which delta-rs left at that commit's version."""
        self._own_commits[app_id] = (table.version(), batch_id)


def committed_version(location: DeltaLocation, app_id: str) -> int | None:
    """Highest batch id committed to the table under ``app_id``, None if none was."""
    table = location.table()
    return None if table is None else table.transaction_version(app_id)


def append_once(
    location: DeltaLocation,
    data: pa.Table,
    *,
    app_id: str,
    batch_id: int,
    partition_by: Sequence[str] | None = None,
    configuration: Mapping[str, str | None] | None = None,
) -> bool:
    """Append ``data`` unless batch ``batch_id`` of ``app_id`` is already in the table.

    The rows and the application transaction land in one atomic Delta commit, so after a crash
    either both are visible or neither is. An empty ``data`` still commits the transaction, which
    makes the batch's completion visible. Returns False when the append was skipped.

    ``configuration`` applies only when this call creates the table.
    """
    if batch_id < 0:
        raise ConfigurationError(f"batch_id must be >= 0, got {batch_id}")
    # This application's own commits are all in the snapshot this process wrote; others'
    # appends do not matter to the check, and delta-rs rebases the append over them.
    table = location.snapshot()
    if table is not None:
        done = location.transaction_version(table, app_id)
        if done is not None and done >= batch_id:
            return False
    try:
        deltalake.write_deltalake(
            table if table is not None else location.uri,
            data,
            mode="append",
            partition_by=list(partition_by) if partition_by else None,
            configuration=configuration if table is None else None,
            storage_options=location.options() if table is None else None,
            commit_properties=deltalake.CommitProperties(
                app_transactions=[deltalake.Transaction(app_id, batch_id)]
            ),
        )
    except BaseException:
        # The commit may have landed all the same: the next check reads the table afresh.
        location.forget()
        raise
    if table is not None:
        location.committed(table, app_id, batch_id)
    return True
