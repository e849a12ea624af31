"""The identity ledger behind the checkpoint-dedup store: a lookup of the identities a sink
already applied (:mod:`kafka_share_eos.ledger.lookup`) through which batches claim the ones
they apply (:mod:`kafka_share_eos.ledger.claims`)."""

from __future__ import annotations

import pyarrow as pa

from kafka_share_eos.ledger.claims import Claim, claim
from kafka_share_eos.ledger.lookup import LedgerLookup


class IdentityLedger(LedgerLookup):
    """Identities applied so far, with the last batch id committed under ``app_id``, claimed
    batch by batch.

    Args:
        uri: Delta table location (local path or object-store URI).
        identity: identity columns; the record identity ``(topic, partition, offset)`` by default.
        app_id: names the application whose batches claim identities (and the Delta
            application transaction of its claims). Applications sharing a ledger need one each.
        storage_options: passed to delta-rs unchanged.
    """

    def claim(self, batch: pa.Table, batch_id: int) -> Claim:
        """Claim the identities of ``batch`` for batch ``batch_id``; see
        :func:`kafka_share_eos.ledger.claims.claim`."""
        return claim(self, batch, batch_id)
