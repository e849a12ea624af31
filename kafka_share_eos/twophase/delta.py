"""A Delta participant: data files written at prepare, added to the Delta log only at commit.

Prepare anti-joins the batch with the keys already in the table (pruned with the files' min/max
statistics) on one snapshot of it, and stages the new records as files the Delta log does not
list (see :mod:`.delta_staging`): durable but invisible.

Several applications may write one table, and two of them can hold the same record (its lock
expired while the first one's batch ran). So the commit itself decides who owns a record: it
lands only as the version right after the snapshot its anti-join read (a Delta commit is a
create-if-absent of that version's log file, and delta-rs is told not to retry on a later
version). If any commit landed since, the commit re-reads the table, leaves out the staged
records whose keys it now holds (staging the rest as a new file), and tries again on that
snapshot; a bounded number of lost races raises, and the decision stays for recovery. Of two
applications staging one record, exactly one commits it.

The commit carries the application transaction ``(app_id, version)`` and, in its commit info,
the transaction id and the files it added: a commit that finds ``version`` reached looks for its
own transaction id in the commits since its snapshot, so a repeated commit is a no-op. The
version is the table's ``transaction_version(app_id) + 1`` at prepare rather than Spark's batch
id: a reset checkpoint restarts batch ids at 0, which would turn every later commit into a
skipped one. A version reached by a commit of another transaction means a second application
uses the same ``app_id`` on this table: the rows are committed under the next version and
:class:`~kafka_share_eos.errors.AppIdConflictError` raised.

delta-rs panics after ``fork()``: use this participant in the driver process only. The module
imports without deltalake; the constructor checks that it is installed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._extras import DELTA
from kafka_share_eos._libs import deltalake
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.delta.transactions import commit_properties
from kafka_share_eos.delta.types import storable, table_schema
from kafka_share_eos.errors import (
    AppIdConflictError,
    CommitConflictError,
    TargetTableError,
    TwoPhaseCommitError,
)
from kafka_share_eos.sinks.delta_upsert import delta_keys_held, rows_absent
from kafka_share_eos.sinks.target_checks import check_delta_table
from kafka_share_eos.storage import open_location
from kafka_share_eos.twophase.delta_staging import StagingArea, action_rows
from kafka_share_eos.twophase.protocol import Token, Transaction, check_name

_TXID_KEY = "kse.txid"
_FILES_KEY = "kse.files"
_ROWS_KEY = "kse.rows"


@dataclass(frozen=True)
class _Committed:
    """What the commit of one token added to the table."""

    files: frozenset[str]
    rows: int
    version_taken: bool = False


class DeltaParticipant(ProcessLocal):
    """Appends the batch's new records to a Delta table, atomically with the other participants.

    A pickled copy keeps the configuration; it opens the table and the staging area in its
    own process.

    Args:
        table_uri: local path or URI of the Delta table; created from the first batch's schema.
        name: participant name, unique within a coordinator.
        storage_options: passed to delta-rs for object stores.
        max_commit_attempts: how often a commit re-reads the table and tries again when other
            writers' commits keep landing first.
        retry_backoff_seconds: pause before the second attempt, doubled on each further one.

    Raises:
        MissingExtraError: deltalake is not installed.
        ConfigurationError: ``name`` is empty or has characters other than letters, digits,
            ``_`` and ``-``.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_staging_area=nothing)

    def __init__(
        self,
        table_uri: str,
        *,
        name: str = "delta",
        storage_options: dict[str, str] | None = None,
        max_commit_attempts: int = 8,
        retry_backoff_seconds: float = 0.05,
    ) -> None:
        DELTA.require("DeltaParticipant")
        self._location = KeptTable(table_uri.rstrip("/"), storage_options,
                                   what=f"DeltaParticipant {name!r}")
        self._uri = self._location.uri
        self._name = check_name("name", name)
        self._max_commit_attempts = max(1, max_commit_attempts)
        self._retry_backoff_seconds = retry_backoff_seconds
        # Opened now, so that settings the store refuses fail here rather than at a batch.
        self._staging_area: StagingArea | None = self._open_staging()

    @property
    def _staging(self) -> StagingArea:
        """Where prepares stage their files (a pickled copy opens it in its own process)."""
        if self._staging_area is None:
            self._staging_area = self._open_staging()
        return self._staging_area

    def _open_staging(self) -> StagingArea:
        return StagingArea(*open_location(self._uri, options=self._location.storage_options))

    @property
    def name(self) -> str:
        """Participant name."""
        return self._name

    def check_target(self) -> None:
        """Check, before any record is read, that the location holds a Delta table or
        nothing yet (the first batch creates it).

        Raises:
            TargetTableError: a file, or a directory of other files, is there.
        """
        check_delta_table(self._location)

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        """Write the records whose keys are not in the table yet as unlisted files.

        Raises:
            TargetTableError: the table has other columns than the batch.
            ValueNotStorableError: a value does not fit its column in the table.
        """
        where = f"Delta table {self._uri!r} (participant {self._name!r})"
        rows = storable(rows, where=where)
        table = self._latest(rows.schema)
        schema = table_schema(table)
        if set(schema.names) != set(rows.column_names):
            raise TargetTableError(
                f"{where} has columns "
                f"{schema.names}, the batch has {rows.column_names}: select the table's columns "
                "before the coordinator, or write to a new table"
            )
        new_rows = rows_absent(
            table, storable(rows.select(schema.names), schema, where=where).cast(schema),
            txn.key_columns,
        )
        if new_rows.num_rows == 0:
            return Token(self._name, txn.txid, 0, {"files": []})
        manifest: dict[str, Any] = {
            "participant": self._name,
            "app_id": txn.app_id,
            "version": (table.transaction_version(txn.app_id) or 0) + 1,
            "snapshot": table.version(),
            "keys": list(txn.key_columns),
        }
        manifest["actions"] = [self._staging.stage(txn.txid, manifest, new_rows)]
        self._staging.write(txn.txid, manifest)
        faults.maybe_crash(faults.TWO_PHASE_DELTA_AFTER_STAGE)
        return Token(self._name, txn.txid, new_rows.num_rows, manifest)

    def commit(self, token: Token) -> int:
        """Add the staged records whose keys the table does not hold yet, in one Delta commit.

        Returns the staged rows left out because another application committed their keys
        after this prepare.

        Raises:
            CommitConflictError: other writers' commits landed first on every attempt; the
                commit decision stays, so the next recovery pass commits the rows.
            AppIdConflictError: another application committed under this ``app_id`` and version;
                this commit's rows were committed under the next version.
            TwoPhaseCommitError: the staged files are gone although nothing committed them:
                something rolled the transaction back after its commit decision.
        """
        if not token.data.get("files"):
            return 0
        done = self._commit_staged(token)
        self._staging.discard(token.txid, keep=done.files)
        if done.version_taken:
            app_id = token.data["app_id"]
            raise AppIdConflictError(
                f"Delta table {self._uri!r} (participant {self._name!r}) holds application "
                f"transaction ({app_id!r}, {token.data['version']}) from a commit of another "
                f"transaction than {token.txid}: two applications use app_id {app_id!r} on "
                "this table. This batch's rows were committed under the next version; give "
                "each application its own app_id"
            )
        return max(token.rows_written - done.rows, 0)

    def abort(self, token: Token) -> None:
        """Delete the staged files and their manifest; a no-op once the transaction is finished."""
        self._staging.discard(token.txid)

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the key columns), whether a committed batch wrote it."""
        return delta_keys_held(self._location, keys)

    def recover(self, prefix: str) -> list[Token]:
        """Tokens of this participant's manifests still staged under ``prefix``."""
        tokens = []
        for txid in self._staging.txids(prefix):
            manifest = self._staging.read(txid)
            if manifest is not None and manifest.get("participant", self._name) == self._name:
                tokens.append(Token(self._name, txid, 0, manifest))
        return tokens

    def _commit_staged(self, token: Token) -> _Committed:
        app_id, version = str(token.data["app_id"]), int(token.data["version"])
        snapshot = int(token.data["snapshot"])
        actions: list[dict[str, Any]] = list(token.data["actions"])
        held = self._location.table(refresh=False)
        if held is not None and held.version() == snapshot and self._staging.holds(token.txid):
            # The kept handle is still at the prepare's snapshot: commit on it without
            # re-reading the log. If any commit landed since, this one fails on its version and
            # the loop below re-reads the table.
            try:
                return self._add(held, token, actions, version)
            except deltalake.exceptions.CommitFailedError:
                pass
        version_taken = False
        last_error: Exception | None = None
        delay = self._retry_backoff_seconds
        for attempt in range(1, self._max_commit_attempts + 1):
            table = self._latest()
            if (table.transaction_version(app_id) or 0) >= version:
                own = self._own_commit(table, token)
                if own is not None:
                    return own
                version_taken = True
                version = (table.transaction_version(app_id) or 0) + 1
            if not self._staging.holds(token.txid):
                raise TwoPhaseCommitError(
                    f"the staged files of {token.txid} in Delta table {self._uri!r} "
                    f"(participant {self._name!r}) are gone and no commit added them: the "
                    "transaction was rolled back after its commit decision, by another "
                    f"application using app_id {app_id!r} or by hand"
                )
            if table.version() != snapshot:
                actions = self._restage(table, token, actions)
                snapshot = table.version()
            try:
                return self._add(table, token, actions, version, version_taken)
            except deltalake.exceptions.CommitFailedError as error:
                last_error = error
            if attempt < self._max_commit_attempts:
                time.sleep(delay)
                delay *= 2
        raise CommitConflictError(
            f"the staged rows of {token.txid} could not be committed to Delta table "
            f"{self._uri!r} (participant {self._name!r}): other writers' commits landed first "
            f"{self._max_commit_attempts} times in a row; the commit decision stays and the "
            f"next recovery pass commits them. Last error: {last_error}"
        )

    def _add(
        self, table: deltalake.DeltaTable, token: Token, actions: list[dict[str, Any]],
        version: int,
        version_taken: bool = False,
    ) -> _Committed:
        """Commit ``actions`` as the version after ``table``'s, with the application
        transaction ``(app_id, version)``; raises ``CommitFailedError`` if that version exists.
        """
        files = [a["path"] for a in actions]
        rows = sum(action_rows(a) for a in actions)
        # No retries inside delta-rs: a retry would land on a later version without checking
        # the keys again, which is exactly the blind append to avoid.
        table.create_write_transaction(
            [deltalake.transaction.AddAction(a["path"], int(a["size"]), {},
                                             int(a["modification_time"]), True, str(a["stats"]))
             for a in actions],
            mode="append",
            schema=table.schema(),
            commit_properties=commit_properties(
                str(token.data["app_id"]), version, rebase=False,
                custom_metadata={_TXID_KEY: token.txid, _FILES_KEY: files, _ROWS_KEY: rows},
            ),
        )
        return _Committed(frozenset(files), rows, version_taken)

    def _own_commit(self, table: deltalake.DeltaTable, token: Token) -> _Committed | None:
        """This token's commit among those since its prepare's snapshot, if it landed."""
        since = int(token.data["snapshot"])
        for entry in table.history(limit=max(table.version() - since, 1)):
            if entry.get(_TXID_KEY) == token.txid:
                return _Committed(frozenset(entry[_FILES_KEY]), int(entry[_ROWS_KEY]))
        return None

    def _restage(
        self, table: deltalake.DeltaTable, token: Token, actions: list[dict[str, Any]]
    ) -> list[dict[str, Any]]:
        """The actions to commit on ``table``'s snapshot: the staged records whose keys it does
        not hold, staged anew when some must be left out."""
        if not actions:
            return actions
        staged = self._staging.rows(actions)
        absent = rows_absent(table, staged, token.data["keys"])
        if absent.num_rows == staged.num_rows:
            return actions
        if absent.num_rows == 0:
            # An empty commit still records the version: a repeated commit finds it.
            return []
        manifest = self._staging.read(token.txid) or dict(token.data)
        return [self._staging.stage(token.txid, manifest, absent)]

    def _latest(self, schema: pa.Schema | None = None) -> deltalake.DeltaTable:
        """The table at its latest version, created from ``schema`` when missing.

        Raises:
            TwoPhaseCommitError: there is no table, and no ``schema`` to create it from.
        """
        table = self._location.table()
        if table is not None:
            return table
        if schema is None:
            raise TwoPhaseCommitError(
                f"Delta table {self._uri!r} (participant {self._name!r}) is gone, with the "
                "files staged in it"
            )
        return self._location.create(schema)


def staged_participants(
    table_uri: str, prefix: str, storage_options: dict[str, str] | None = None
) -> list[DeltaParticipant]:
    """A participant for each name with files staged under ``prefix`` in the table: enough to
    commit or roll them back from any process.

    Raises:
        MissingExtraError: deltalake is not installed.
    """
    staging = StagingArea(*open_location(table_uri.rstrip("/"), options=storage_options))
    names = sorted({
        str(manifest.get("participant", "delta"))
        for manifest in map(staging.read, staging.txids(prefix)) if manifest is not None
    })
    return [DeltaParticipant(table_uri, name=name, storage_options=storage_options)
            for name in names]
