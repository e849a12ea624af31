"""A delta-rs table handle kept between batches: caught up incrementally, reopened when worn.

Opening a table replays its log from the latest checkpoint; a kept handle only reads the commits
since it was last brought up to date, and a writer whose commit fails when anything landed since
its snapshot need not read even those for every batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_share_eos._libs import deltalake
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.delta.location import DeltaLocation

# A delta-rs handle kept open gets slower with every version it commits or catches up with
# (deltalake 1.6.6: a one-row append took 5 ms at the 1st commit through one handle and 37 ms at
# the 400th); a handle opened anew starts from the latest checkpoint (written every 100 commits
# by default) and is fast again. So a handle is reopened this many versions after its opening.
REOPEN_AFTER_VERSIONS = 100


@dataclass
class KeptTable(DeltaLocation, ProcessLocal):
    """A Delta location with the one handle on its table this process keeps, and what this
    process knows of its own application transactions at that handle's versions.

    A pickled copy keeps the location only: it opens a handle of its own, and knows nothing of
    the commits the process it was copied from made (that process may go on committing).

    Raises:
        MissingExtraError: deltalake is not installed.
        ConfigurationError: ``uri``'s scheme is not one delta-rs has a store for.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(
        _table=nothing, _opened_at=int, _contended=int, _own_commits=dict)

    _table: deltalake.DeltaTable | None = field(default=None, init=False, repr=False)
    _opened_at: int = field(default=0, init=False, repr=False)
    _contended: int = field(default=0, init=False, repr=False)
    # app_id -> (table version, batch id) of this process's last commit for that app_id.
    _own_commits: dict[str, tuple[int, int]] = field(default_factory=dict, init=False, repr=False)

    def table(self, *, refresh: bool = True) -> deltalake.DeltaTable | None:
        """The table, or None while it does not exist yet.

        With ``refresh`` the handle first catches up with commits made since it was last read;
        without, it is the snapshot this process last saw or wrote (one log listing saved).
        """
        if self._worn():
            self._table = None  # reopened below, from the latest checkpoint
        if self._table is None:
            opened = self.open()
            if opened is not None:
                self._keep(opened)
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

    def seen_version(self) -> int | None:
        """The version of the kept handle's snapshot (None without one): what an attempt that
        lost to other writers had read."""
        return None if self._table is None else self._table.version()

    def contended(self, batches: int = 16) -> None:
        """Another writer won a commit race: the next ``batches`` snapshots are refreshed."""
        self._contended = batches

    def forget(self) -> None:
        """Drop the kept handle, e.g. after another process rewrote the table."""
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

    def _created(self, table: deltalake.DeltaTable) -> deltalake.DeltaTable:
        return self._keep(table)

    def _keep(self, table: deltalake.DeltaTable) -> deltalake.DeltaTable:
        self._table = table
        self._opened_at = table.version()
        return table

    def _worn(self) -> bool:
        """Whether the kept handle is :data:`REOPEN_AFTER_VERSIONS` past its opening."""
        return (
            self._table is not None
            and self._table.version() - self._opened_at >= REOPEN_AFTER_VERSIONS
        )
