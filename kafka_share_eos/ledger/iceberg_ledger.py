"""The identity ledger as an Apache Iceberg table, claimed through the catalog's atomic swap of
the table's metadata.

The rows are those of the Delta ledger (:mod:`kafka_share_eos.ledger.rows`): one per claimed
identity, with the application and batch that claimed it and when. A batch claims the
identities it found absent by appending them in one snapshot that commits only onto the
snapshot it read them from: the catalog swaps the table's metadata pointer only while the
table's branch still names that snapshot, and pyiceberg's rebase-and-retry is off
(:func:`~kafka_share_eos.iceberg.tables.without_rebase`). So of two batches claiming one
identity exactly one commit lands; the other fails with ``CommitFailedException``, reads the
new snapshot, finds the identity claimed and leaves it out, as on Delta
(:mod:`kafka_share_eos.ledger.claims`).

Which batch an application claimed last is its watermark in the snapshot properties of
:mod:`kafka_share_eos.iceberg.snapshots`, carried forward by every commit to the ledger (claims,
pruning, compaction), so expiring old snapshots never forgets it.

With the record identity the table is partitioned by ``topic`` and ``partition``: each claim
writes one file per share-partition, and a lookup reads only the files whose offset bounds can
hold the batch's offsets (:func:`~kafka_share_eos.sinks.iceberg_keys.covering`).
"""

from __future__ import annotations

import copy
import datetime as dt
import random
import time
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos import faults, formats
from kafka_share_eos._libs import iceberg_errors
from kafka_share_eos.delta.transactions import check_batch_order
from kafka_share_eos.errors import (
    ClaimConflictError,
    ConfigurationError,
    LocationNotFoundError,
    SinkConfigurationError,
)
from kafka_share_eos.faults import DEDUP_BEFORE_CLAIM as BEFORE_CLAIM
from kafka_share_eos.iceberg.snapshots import CommitRecord, commit_record
from kafka_share_eos.iceberg.tables import as_table_types, load_table, without_rebase
from kafka_share_eos.ledger.claims import (
    DEFAULT_CLAIM_ATTEMPTS,
    Claim,
    check_replay,
    claim_rows,
    split_claimed,
    stored_schema,
)
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION
from kafka_share_eos.ledger.rows import (
    APP_COLUMN,
    BATCH_COLUMN,
    BOOKKEEPING_COLUMNS,
    DEFAULT_APP_ID,
    RECORD_IDENTITY,
    checked_identity,
    rows_joined,
    select_in_order,
)
from kafka_share_eos.sinks.iceberg_keys import covering
from kafka_share_eos.sinks.iceberg_target import IcebergTarget

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

    from kafka_share_eos.ledger.compaction import CompactResult
    from kafka_share_eos.ledger.retention import PruneResult, RetentionPolicy
    from kafka_share_eos.ledger.stats import LedgerStats

LEDGER_TABLE_PROPERTIES: Mapping[str, str] = {
    # Every claim adds a snapshot and a manifest: merged manifests keep a lookup's planning
    # short, and old metadata files go once a hundred newer ones exist.
    "commit.manifest-merge.enabled": "true",
    "write.metadata.delete-after-commit.enabled": "true",
    "write.metadata.previous-versions-max": "100",
    formats.TABLE_PROPERTY: str(formats.LEDGER_TABLE),
}


class IcebergLedger:
    """The checkpoint-dedup store's identity ledger in an Iceberg table; pass it as the store's
    ``ledger=`` in place of a Delta table's location.

    Args:
        table: the ledger's identifier in the catalog (``"db.orders_ledger"``); the first claim
            creates it (and its namespace).
        catalog: a pyiceberg ``Catalog`` or its configuration dict (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        identity: identity columns; the record identity ``(topic, partition, offset)`` by
            default. A store sets its own ``key_columns`` on its copy.
        app_id: names the application whose batches claim identities; a store sets its own.
        max_claim_attempts: how often a claim is attempted while other writers commit first.

    Raises:
        MissingExtraError: pyiceberg is not installed.
        SinkConfigurationError: an identifier without a namespace, a ``catalog`` of another
            kind, or ``max_claim_attempts`` below 1.
        ConfigurationError: ``identity`` is empty or names a bookkeeping column.
    """

    def __init__(
        self,
        table: str,
        *,
        catalog: Catalog | Mapping[str, Any],
        identity: Sequence[str] = RECORD_IDENTITY,
        app_id: str = DEFAULT_APP_ID,
        max_claim_attempts: int = DEFAULT_CLAIM_ATTEMPTS,
    ) -> None:
        self.identity = checked_identity(identity)
        # Its commit attempts are the upkeep's; claims make their own, with a random pause.
        self.table = IcebergTarget(table, catalog, create_table=True, what="IcebergLedger")
        if max_claim_attempts < 1:
            raise SinkConfigurationError(
                f"max_claim_attempts must be >= 1, got {max_claim_attempts}")
        self.max_claim_attempts = max_claim_attempts
        self.app_id = app_id
        self.backoff_seconds = 0.05

    @classmethod
    def existing(
        cls, table: str, *, catalog: Catalog | Mapping[str, Any], app_id: str = DEFAULT_APP_ID,
    ) -> IcebergLedger:
        """Open a ledger that exists, taking its identity columns from the table's schema.

        Raises:
            LocationNotFoundError: the catalog has no such table.
            ConfigurationError: the table there is not an identity ledger.
        """
        ledger = cls(table, catalog=catalog, app_id=app_id)
        identity = ledger.stored_identity()
        if identity is None:
            raise LocationNotFoundError(f"no Iceberg ledger table {ledger.uri!r}")
        return ledger.configured(identity, app_id)

    def configured(self, identity: Sequence[str], app_id: str) -> IcebergLedger:
        """A copy claiming ``identity`` under ``app_id`` (a store's own copy)."""
        ledger = copy.copy(self)
        ledger.identity, ledger.app_id = checked_identity(identity), app_id
        return ledger

    @property
    def is_record_identity(self) -> bool:
        """True when identities are Kafka record coordinates (the table is partitioned)."""
        return self.identity == RECORD_IDENTITY

    @property
    def uri(self) -> str:
        """The ledger as ``iceberg:<catalog>.<table>``."""
        return self.table.target

    def check_target(self) -> None:
        """Check, before any record is read, that the ledger is an identity ledger this release
        reads, or absent (the first claim creates it).

        Raises:
            TargetTableError: the table has equality deletes or a format version above 2.
            UnsupportedFormatError: a later release created the ledger.
            ConfigurationError: the table is not an identity ledger.
        """
        with self.table.catalog_errors("checking the ledger", before_any_record=True):
            self.stored_identity()

    def stored_identity(self) -> tuple[str, ...] | None:
        """The identity columns of the ledger's table; None while it is absent.

        Raises:
            ConfigurationError: the table is not an identity ledger.
            UnsupportedFormatError: a later release created the ledger.
        """
        table = self.current()
        if table is None:
            return None
        names = table.schema().as_arrow().names
        return tuple(n for n in names if n not in BOOKKEEPING_COLUMNS)

    def current(self) -> Table | None:
        """The ledger's table at its current snapshot, checked; None while it is absent."""
        table = load_table(self.table.catalog.catalog(), self.table.identifier)
        if table is not None:
            self._check(table)
        return table

    def last_batch(self) -> int | None:
        """The highest batch id this application claimed identities for, None before any."""
        table = self.current()
        return None if table is None else commit_record(table).committed(self.app_id)

    def new_rows(self, batch: pa.Table) -> pa.Table:
        """The rows of ``batch`` whose identity is not in the ledger, in their original order."""
        table = self.current()
        seen = None if table is None else self._seen(table, batch, self.identity)
        if seen is None or seen.num_rows == 0:
            return batch
        return rows_joined(batch, self.identity, seen, "left anti")

    def claim(self, batch: pa.Table, batch_id: int) -> Claim:
        """Claim the identities of ``batch`` (unique on them) for batch ``batch_id`` of this
        application, and return the rows this batch owns.

        Raises:
            AppIdConflictError: the ledger already holds a later batch of this ``app_id``.
            BatchIdReusedError: a replay of the last batch brings identities in no claim.
            ClaimConflictError: other writers committed first on every attempt.
        """
        lost: BaseException | None = None
        for attempt in range(1, self.max_claim_attempts + 1):
            with self.table.catalog_errors(f"claiming batch {batch_id}"):
                table = self._opened(batch)
                record = commit_record(table)
                recorded = check_batch_order(record.committed(self.app_id), self.app_id,
                                             batch_id, f"ledger {self.uri!r}")
                try:
                    seen = self._seen(table, batch, [*self.identity, APP_COLUMN, BATCH_COLUMN])
                except FileNotFoundError as error:
                    # A compaction with a short retention deleted a file this snapshot lists.
                    lost = error
                    continue
                own, fresh = split_claimed(self, batch, seen, batch_id)
                check_replay(self.uri, self.app_id, recorded, batch_id, fresh)
                faults.maybe_crash(BEFORE_CLAIM)
                if fresh.num_rows:
                    try:
                        self._commit(table, record, fresh, batch_id)
                    except (iceberg_errors.CommitFailedException, FileNotFoundError) as error:
                        # Someone committed since our snapshot (a compaction may have deleted
                        # the manifests the append would carry): re-read, claim what is free.
                        lost = error
                        time.sleep(random.uniform(0, self.backoff_seconds * min(attempt, 10)))
                        continue
            rows = fresh if own.num_rows == 0 else select_in_order(batch, self.identity, own,
                                                                    fresh)
            return Claim(rows, fresh.num_rows, batch.num_rows - rows.num_rows, attempt)
        raise ClaimConflictError(
            f"ledger {self.uri!r}: batch {batch_id} of app_id {self.app_id!r} lost the claim "
            f"commit to concurrent writers {self.max_claim_attempts} times in a row "
            f"(claims, prunings or compactions); last: {lost}"
        )

    def prune(self, policy: RetentionPolicy) -> PruneResult:
        """Delete the identities ``policy`` allows to go; see
        :func:`kafka_share_eos.ledger.iceberg_upkeep.prune`."""
        from kafka_share_eos.ledger.iceberg_upkeep import prune

        return prune(self, policy)

    def compact(self, *, target_size: int | None = None,
                vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION) -> CompactResult:
        """Rewrite the ledger's files and expire old snapshots; see
        :func:`kafka_share_eos.ledger.iceberg_upkeep.compact`."""
        from kafka_share_eos.ledger.iceberg_upkeep import compact

        return compact(self, target_size=target_size, vacuum_retention=vacuum_retention)

    def stats(self) -> LedgerStats:
        """Rows, files and bytes of the ledger; see
        :func:`kafka_share_eos.ledger.iceberg_upkeep.stats`."""
        from kafka_share_eos.ledger.iceberg_upkeep import stats

        return stats(self)

    def close(self) -> None:
        """Drop the catalog built by this ledger (the next claim builds it again)."""
        self.table.close()

    def _check(self, table: Table) -> None:
        self.table.check(table, [])
        found = table.metadata.properties.get(formats.TABLE_PROPERTY)
        formats.check_format("identity ledger", found, formats.LEDGER_TABLE, self.uri)
        names = table.schema().as_arrow().names
        if not set(BOOKKEEPING_COLUMNS) <= set(names):
            raise ConfigurationError(
                f"Iceberg table {self.uri!r} is not an identity ledger: it lacks "
                f"{[c for c in BOOKKEEPING_COLUMNS if c not in names]} (columns: {names})"
            )

    def _opened(self, batch: pa.Table) -> Table:
        """The ledger at its current snapshot, created (empty) when absent."""
        table = self.current()
        if table is None:
            self._create(stored_schema(claim_rows(self, batch.slice(0, 0), 0).schema))
            table = self.current()
            assert table is not None
        self.table.check(table, [*self.identity, *BOOKKEEPING_COLUMNS])
        return table

    def _create(self, schema: pa.Schema) -> None:
        """Create the table and its namespace, unless another writer did first."""
        catalog = self.table.catalog.catalog()
        namespace = self.table.identifier.rpartition(".")[0]
        try:
            catalog.create_namespace_if_not_exists(namespace)
        except Exception:
            # pyiceberg's SQL catalog raises its database's unique violation when another
            # writer created the namespace between its look and its insert.
            if not catalog.namespace_exists(namespace):
                raise
        try:
            with catalog.create_table_transaction(
                self.table.identifier, schema=schema, properties=dict(LEDGER_TABLE_PROPERTIES)
            ) as created:
                if self.is_record_identity:
                    with created.update_spec() as spec:
                        spec.add_identity("topic").add_identity("partition")
        except (iceberg_errors.TableAlreadyExistsError, iceberg_errors.CommitFailedException):
            # Another writer created it first (the catalog refused this creation, or found it
            # when this commit asserted the table absent).
            if load_table(catalog, self.table.identifier) is None:
                raise

    def _seen(self, table: Table, batch: pa.Table, columns: Sequence[str]) -> pa.Table | None:
        """The ``columns`` of the ledger rows that may match the identities of ``batch`` (a
        superset: Iceberg skips the files whose bounds rule them out); None when empty."""
        keys = batch.select(list(self.identity))
        present = keys.filter(reduce(pc.and_, [pc.is_valid(keys[c]) for c in self.identity]))
        if present.num_rows == 0 or table.current_snapshot() is None:
            return None
        return table.scan(row_filter=covering(present),
                          selected_fields=tuple(columns)).to_arrow().select(list(columns))

    def _commit(self, table: Table, record: CommitRecord, fresh: pa.Table,
                batch_id: int) -> None:
        """Append claims for ``fresh`` unless another commit got in since ``table``'s
        snapshot (then ``CommitFailedException``)."""
        rows = as_table_types(claim_rows(self, fresh, batch_id), table, f"ledger {self.uri}")
        transaction = without_rebase(table).transaction()
        transaction.append(rows, snapshot_properties=record.properties(self.app_id, batch_id,
                                                                       None))
        transaction.commit_transaction()
