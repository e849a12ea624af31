"""The identity ledger behind the checkpoint-dedup store: a lookup of the identities a sink
already applied (:mod:`kafka_share_eos.ledger.lookup`) through which batches claim the ones
they apply (:mod:`kafka_share_eos.ledger.claims`)."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from kafka_share_eos.ledger.claims import Claim, claim
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION, CompactResult, compact
from kafka_share_eos.ledger.lookup import LedgerLookup
from kafka_share_eos.ledger.retention import PruneResult, RetentionPolicy, prune
from kafka_share_eos.sinks.target_checks import check_delta_table


class IdentityLedger(LedgerLookup):
    """Identities applied so far, with the last batch id committed under ``app_id``, claimed
    batch by batch; it takes the arguments of
    :class:`~kafka_share_eos.ledger.lookup.LedgerLookup`.
    """

    def check_target(self) -> None:
        """Check, before any record is read, that the ledger's location holds a Delta table or
        nothing yet (the first batch creates the ledger).

        Raises:
            TargetTableError: a file, or a directory of other files, is there.
        """
        check_delta_table(self.location)

    def claim(self, batch: pa.Table, batch_id: int) -> Claim:
        """Claim the identities of ``batch`` for batch ``batch_id``; see
        :func:`kafka_share_eos.ledger.claims.claim`."""
        return claim(self, batch, batch_id)

    def stored_identity(self) -> tuple[str, ...] | None:
        """The identity columns of the ledger's table; None while it is absent.

        Raises:
            ConfigurationError: the Delta table there is not an identity ledger.
        """
        if self.location.table() is None:
            return None
        return LedgerLookup.existing(self.uri, app_id=self.app_id,
                                     storage_options=self.location.storage_options).identity

    def prune(self, policy: RetentionPolicy) -> PruneResult:
        """Delete the identities ``policy`` allows to go; see
        :func:`kafka_share_eos.ledger.retention.prune`."""
        return prune(self, policy)

    def compact(self, *, target_size: int | None = None,
                vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION) -> CompactResult:
        """Compact and vacuum the ledger; see :func:`kafka_share_eos.ledger.compaction.compact`."""
        return compact(self, target_size=target_size, vacuum_retention=vacuum_retention)
