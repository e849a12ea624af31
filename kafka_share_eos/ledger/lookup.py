"""A Delta table holding the identities of records already applied to a sink, and its reading.

Layout: one row per applied identity plus the application and batch that claimed it
(``_app_id``, ``_batch_id``) and when (``_applied_at``); :mod:`kafka_share_eos.ledger.claims`
says how applications sharing a ledger decide who applies a record, and
:class:`~kafka_share_eos.ledger.identity_ledger.IdentityLedger` adds that claim to the lookup.

With the default record identity ``(topic, partition, offset)`` the table is partitioned by
``topic`` and ``partition``; each batch writes one file per share-partition whose offsets are
close together, so the per-file min/max statistics of ``offset`` let a lookup skip every file
whose offset range cannot overlap the batch. A lookup therefore reads the few recent files of
the partitions the batch touches, not the whole ledger.

With business-key identities there is no natural partitioning; the lookup prunes files on the
min/max of the first key column, which helps when keys grow over time (ids, timestamps).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Self

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos import formats
from kafka_share_eos._libs import deltalake
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.delta.predicates import quote_identifier, sql_literal
from kafka_share_eos.delta.transactions import committed_version
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger.known_claims import KnownClaims
from kafka_share_eos.ledger.rows import (
    APPLIED_AT_COLUMN,
    BATCH_COLUMN,
    BOOKKEEPING_COLUMNS,
    DEFAULT_APP_ID,
    RECORD_IDENTITY,
    checked_identity,
    offset_ranges,
    rows_joined,
)


class LedgerTable(KeptTable):
    """The ledger's table, whose format version is checked on every handle opened on it (a
    created one too): a process refuses a ledger a later release created before it reads or
    claims anything.

    Raises:
        UnsupportedFormatError: (when opened) the table's format is newer than this release reads.
    """

    def _keep(self, table: deltalake.DeltaTable) -> deltalake.DeltaTable:
        found = table.metadata().configuration.get(formats.TABLE_PROPERTY)
        formats.check_format("identity ledger", found, formats.LEDGER_TABLE, self.uri)
        return super()._keep(table)


class LedgerLookup(ProcessLocal):
    """Identities applied so far, with the last batch id committed under ``app_id``.

    A pickled copy does not take over what this process knows of its own claims
    (:class:`~kafka_share_eos.ledger.known_claims.KnownClaims`): it learns the ledger anew.

    Args:
        uri: Delta table location (local path or object-store URI).
        identity: identity columns; the record identity ``(topic, partition, offset)`` by default.
        app_id: names the application whose batches claim identities (and the Delta
            application transaction of its claims). Applications sharing a ledger need one each.
        storage_options: passed to delta-rs unchanged.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_known=nothing)

    def __init__(
        self,
        uri: str,
        *,
        identity: Sequence[str] = RECORD_IDENTITY,
        app_id: str = DEFAULT_APP_ID,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        self.identity = checked_identity(identity)
        self.location = LedgerTable(uri, storage_options)
        self.app_id = app_id
        self._known: KnownClaims | None = None

    @classmethod
    def existing(
        cls,
        uri: str,
        *,
        app_id: str = DEFAULT_APP_ID,
        storage_options: Mapping[str, str] | None = None,
    ) -> Self:
        """Open a ledger that exists, taking its identity columns from the table's schema.

        Raises:
            LocationNotFoundError: there is no Delta table at ``uri`` (a local file, say).
            ConfigurationError: the Delta table there is not an identity ledger.
        """
        if "://" not in uri and Path(uri).is_file():
            # delta-rs would say only that it cannot walk the directory of its log.
            raise LocationNotFoundError(f"no Delta ledger table at {uri!r}: it is a file")
        location = LedgerTable(uri, storage_options)
        table = location.table()
        if table is None:
            raise LocationNotFoundError(f"no Delta ledger table at {uri!r}")
        names = [f.name for f in table.schema().fields]
        identity = [n for n in names if n not in BOOKKEEPING_COLUMNS]
        if BATCH_COLUMN not in names or APPLIED_AT_COLUMN not in names:
            raise ConfigurationError(
                f"Delta table {uri!r} is not an identity ledger: it lacks "
                f"{BATCH_COLUMN!r} and {APPLIED_AT_COLUMN!r} (columns: {names})"
            )
        ledger = cls(uri, identity=identity, app_id=app_id, storage_options=storage_options)
        ledger.location = location
        return ledger

    @property
    def uri(self) -> str:
        """Where the ledger table lives."""
        return self.location.uri

    @property
    def is_record_identity(self) -> bool:
        """True when identities are Kafka record coordinates (enables the offset layout)."""
        return self.identity == RECORD_IDENTITY

    @property
    def partition_by(self) -> list[str]:
        """Partition columns of the ledger table."""
        return ["topic", "partition"] if self.is_record_identity else []

    def known_claims(self) -> KnownClaims | None:
        """What this process knows the ledger holds, for claims without a read (record
        identities only)."""
        if not self.is_record_identity:
            return None
        if self._known is None:
            self._known = KnownClaims()
        return self._known

    def last_batch(self) -> int | None:
        """The highest batch id this application claimed identities for, None before any."""
        return committed_version(self.location, self.app_id)

    def read(
        self, columns: Sequence[str], predicate: str | None = None, *, refresh: bool = True
    ) -> pa.Table | None:
        """Rows matching the SQL ``predicate`` (all rows when None); None while the table is absent.

        delta-rs' own engine evaluates the predicate, skipping partitions and files whose
        statistics rule it out before reading any data. Without ``refresh`` the snapshot last
        seen by this process is read.
        """
        table = self.location.table(refresh=refresh)
        if table is None:
            return None
        return pa.table(table.scan(columns=list(columns), predicate=predicate))

    def new_rows(self, batch: pa.Table, *, refresh: bool = True) -> pa.Table:
        """The rows of ``batch`` whose identity is not in the ledger, in their original order.

        Pass ``refresh=False`` right after :meth:`last_batch`, which already refreshed.
        """
        if batch.num_rows == 0:
            return batch
        seen = self.read(self.identity, self.lookup_predicate(batch), refresh=refresh)
        return batch if seen is None else self.new_rows_among(batch, seen)

    def new_rows_among(self, batch: pa.Table, seen: pa.Table) -> pa.Table:
        """The rows of ``batch`` whose identity ``seen`` (identity columns) lacks, in order."""
        if seen.num_rows == 0:
            return batch
        return rows_joined(batch, self.identity, seen, "left anti")

    def lookup_predicate(self, batch: pa.Table) -> str | None:
        """A SQL predicate selecting a superset of the ledger rows that can match ``batch``.

        The anti-join that follows makes the result exact; the predicate only has to be cheap
        and selective enough for file skipping.
        """
        if self.is_record_identity:
            return " OR ".join(
                f'("topic" = {sql_literal(topic)} AND "partition" = {partition}'
                f' AND "offset" BETWEEN {lo} AND {hi})'
                for (topic, partition), ranges in offset_ranges(batch).items()
                for lo, hi in ranges
            )
        first = self.identity[0]
        bounds = pc.min_max(batch.column(first)).as_py()
        lo, hi = bounds["min"], bounds["max"]
        if not all(isinstance(v, str | int) and not isinstance(v, bool) for v in (lo, hi)):
            return None  # no range pruning for other types: every file is read
        return f"{quote_identifier(first)} BETWEEN {sql_literal(lo)} AND {sql_literal(hi)}"
