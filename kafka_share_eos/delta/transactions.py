"""Delta application transactions: commits that happen at most once per (application id, batch).

A Delta commit can carry an application transaction ``(app_id, version)``; the table remembers the
highest version per application id. delta-rs records whatever version it is given and never refuses
a repeated or lower one, so the check "was this batch already committed?" is made here, right
before the commit, against the snapshot that holds this process's own last commit (a failed
append makes the next check read the table afresh).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import deltalake
from kafka_share_eos.errors import AppIdConflictError, ConfigurationError

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_share_eos.delta.handles import KeptTable


def commit_properties(
    app_id: str,
    version: int | None,
    *,
    rebase: bool = True,
    custom_metadata: dict[str, Any] | None = None,
) -> deltalake.CommitProperties:
    """delta-rs commit properties recording the application transaction ``(app_id, version)``
    (none when ``version`` is None).

    Without ``rebase`` delta-rs does not retry the commit on a later version than the snapshot
    it was prepared on: a writer that decided what to write from that snapshot (keys found
    absent, identities found free) gets ``CommitFailedError`` instead and decides again.
    """
    return deltalake.CommitProperties(
        app_transactions=None if version is None else [deltalake.Transaction(app_id, version)],
        max_commit_retries=None if rebase else 0,
        custom_metadata=custom_metadata,
    )


def check_batch_order(recorded: int | None, app_id: str, batch_id: int, where: str) -> int | None:
    """``recorded``, the highest batch a table holds of ``app_id`` (None before any), once
    batch ``batch_id`` may follow it.

    Batch ids of one streaming query only grow, and a replay repeats the last one; so a batch
    below the recorded one comes from another application, or a new checkpoint, using the same
    ``app_id``, and treating it as a replay would skip its rows.

    Raises:
        AppIdConflictError: ``batch_id`` is below the recorded batch; ``where`` names the table.
    """
    if recorded is not None and recorded > batch_id:
        raise AppIdConflictError(
            f"{where} already holds batch {recorded} of app_id {app_id!r}, and this query is at "
            f"batch {batch_id}: another application or an earlier checkpoint uses the same "
            "app_id. Give each application, and each new checkpoint, its own app_id (by "
            "default it is the streaming query's id, which always is)"
        )
    return recorded


def committed_version(location: KeptTable, app_id: str) -> int | None:
    """Highest batch id committed to the table under ``app_id``, None if none was."""
    table = location.table()
    return None if table is None else table.transaction_version(app_id)


def append_once(
    location: KeptTable,
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

    Raises:
        ConfigurationError: ``batch_id`` is negative.
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
            commit_properties=commit_properties(app_id, batch_id),
        )
    except BaseException:
        # The commit may have landed all the same: the next check reads the table afresh.
        location.forget()
        raise
    if table is not None:
        location.committed(table, app_id, batch_id)
    return True
