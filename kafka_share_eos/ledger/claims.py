"""Claiming identities in a ledger that several applications share.

Applications consuming one share group may write through one ledger and one sink. A record
whose lock expires while application A's batch holds it is delivered to application B, so two
running batches hold it. The ledger decides which of them applies it, before either calls its
sink: a batch *claims* the identities it found absent by appending them, in a commit delta-rs may
not rebase onto a later snapshot than the one it read them from: if any commit landed since,
delta-rs raises ``CommitFailedError``. So of two batches claiming one identity exactly one commit
lands; the other re-reads, finds the identity claimed, and leaves it out. (An append costs a
fraction of a MERGE, which would also read the ledger files the claims may touch; it conflicts
with every concurrent claim rather than only with those in its key ranges, a retry that is rare
at the few commits per second of a handful of applications.)

A claim row names its application and batch (``_app_id``, ``_batch_id``), and its commit carries
the application transaction ``(app_id, batch_id)``. A batch replayed after a crash finds its own
claims and hands them to its sink again; the sink ignores a batch id it already applied. Batch
ids of one ``app_id`` only grow, so a batch below the one already claimed means a second
application (or a new checkpoint) uses the same ``app_id``: that is refused, loudly.
"""

from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos import faults
from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.conflicts import describe_winners, file_vanished
from kafka_share_eos.delta.transactions import check_batch_order, commit_properties
from kafka_share_eos.delta.types import table_schema
from kafka_share_eos.errors import BatchIdReusedError
from kafka_share_eos.errors import ClaimConflictError as ClaimConflictError
from kafka_share_eos.faults import DEDUP_BEFORE_CLAIM as BEFORE_CLAIM
from kafka_share_eos.ledger.lookup import LedgerLookup
from kafka_share_eos.ledger.rows import (
    APP_COLUMN,
    APPLIED_AT_COLUMN,
    BATCH_COLUMN,
    LEDGER_TABLE_CONFIGURATION,
    Claimant,
    rows_joined,
    select_in_order,
)

DEFAULT_CLAIM_ATTEMPTS = 30


@dataclass(frozen=True)
class Claim:
    """What one batch owns in the ledger.

    Attributes:
        rows: the batch's rows this batch applies, in batch order: identities it claimed now,
            plus those an earlier attempt of the same batch claimed (a replay).
        claimed_now: identities this call added to the ledger.
        held_elsewhere: identities another batch or application had already claimed.
        attempts: commits tried; more than one means concurrent claims got in first.
    """

    rows: pa.Table
    claimed_now: int
    held_elsewhere: int
    attempts: int


def claim(
    ledger: LedgerLookup,
    batch: pa.Table,
    batch_id: int,
    *,
    max_attempts: int = DEFAULT_CLAIM_ATTEMPTS,
    backoff_seconds: float = 0.05,
) -> Claim:
    """Claim the identities of ``batch`` (unique on them) for batch ``batch_id`` of the ledger's
    application, and return the rows this batch owns.

    Raises:
        AppIdConflictError: the ledger already holds a later batch of this ``app_id``.
        ClaimConflictError: other writers (claims, compactions, vacuums, appends) committed
            under ``max_attempts`` attempts in a row; it names their commits.
    """
    claimed_now = 0
    known = ledger.known_claims()
    lost: BaseException | None = None
    for attempt in range(1, max_attempts + 1):
        table = _open(ledger, batch, fresh=attempt > 1)
        recorded = check_batch_order(ledger.location.transaction_version(table, ledger.app_id),
                                     ledger.app_id, batch_id, f"ledger {ledger.uri!r}")
        try:
            own, fresh = _decide(ledger, table, batch, batch_id)
        except Exception as error:
            # A VACUUM deleted a file this snapshot lists: read a fresh one.
            if not file_vanished(error):
                raise
            lost = error
            ledger.location.contended()
            continue
        check_replay(ledger.uri, ledger.app_id, recorded, batch_id, fresh)
        faults.maybe_crash(BEFORE_CLAIM)
        if fresh.num_rows:
            try:
                _commit_claims(ledger, table, fresh, batch_id)
            except deltalake.exceptions.CommitFailedError as error:
                # Someone committed since our snapshot: re-read and claim what is still free.
                lost = error
                ledger.location.contended()
                time.sleep(random.uniform(0, backoff_seconds * min(attempt, 10)))
                continue
            claimed_now += fresh.num_rows
            if known is not None:
                known.claimed(table, fresh, ledger.app_id, batch_id)
        # Without claims of an earlier attempt, the fresh rows are the batch's, in its order.
        rows = fresh if own.num_rows == 0 else select_in_order(batch, ledger.identity, own, fresh)
        return Claim(rows, claimed_now, batch.num_rows - rows.num_rows, attempt)
    seen = ledger.location.seen_version()
    raise ClaimConflictError(
        f"ledger {ledger.uri!r}: batch {batch_id} of app_id {ledger.app_id!r} lost the claim "
        f"commit to concurrent writers {max_attempts} times in a row (claims, compactions, "
        f"vacuums or appends); {describe_winners(ledger.location, seen, lost)}"
    )


def check_replay(
    where: str, app_id: str, recorded: int | None, batch_id: int, fresh: pa.Table
) -> None:
    """A replay of the batch recorded last finds every record claimed, by this run or another
    application: records in no claim make it another batch under the same id.

    Raises:
        BatchIdReusedError: ``batch_id`` is the ledger's ``recorded`` one, and ``fresh`` (the
            batch's rows in no claim) is not empty.
    """
    if recorded == batch_id and fresh.num_rows:
        raise BatchIdReusedError(
            f"ledger {where!r} already holds the claims of batch {batch_id} of app_id "
            f"{app_id!r}, and this batch {batch_id} brings {fresh.num_rows} record(s) "
            "in no claim: a batch id names one set of records (is the app_id shared?)"
        )


def _decide(
    ledger: LedgerLookup, table: deltalake.DeltaTable, batch: pa.Table, batch_id: int
) -> tuple[pa.Table, pa.Table]:
    """As of ``table``'s snapshot: the identities this batch claimed in an earlier attempt, and
    the batch's rows nobody claimed (from what this process knows, else from a read)."""
    known = ledger.known_claims()
    split = known.split(table, batch, ledger.app_id, batch_id) if known is not None else None
    if split is not None:
        return split
    seen = ledger.read(
        [*ledger.identity, APP_COLUMN, BATCH_COLUMN], ledger.lookup_predicate(batch),
        refresh=False,
    )
    return split_claimed(ledger, batch, seen, batch_id)


def _open(ledger: LedgerLookup, batch: pa.Table, *, fresh: bool) -> deltalake.DeltaTable:
    """The ledger at its latest snapshot (``fresh``), or as this process last saw it unless
    other writers were seen lately; created (empty) or given the application column when it
    lacks them.

    A stale snapshot is safe: an identity it shows claimed is claimed (claims are only removed
    once they cannot come back), and a claim of one it shows free commits only if nothing was
    committed since.
    """
    table = ledger.location.table() if fresh else ledger.location.snapshot()
    if table is None:
        return ledger.location.create(
            stored_schema(claim_rows(ledger, batch.slice(0, 0), 0).schema),
            partition_by=ledger.partition_by,
            configuration=LEDGER_TABLE_CONFIGURATION,
        )
    if APP_COLUMN not in table_schema(table).names:
        # Ledgers written before applications shared them: their rows belong to no one now.
        column = deltalake.Field(APP_COLUMN, deltalake.schema.PrimitiveType("string"),
                                 nullable=True)
        table.alter.add_columns([column])
        table = ledger.location.table()
        assert table is not None
    return table


def split_claimed(
    ledger: Claimant, batch: pa.Table, seen: pa.Table | None, batch_id: int
) -> tuple[pa.Table, pa.Table]:
    """The identities this batch claimed in an earlier attempt, and the batch's rows no one
    claimed yet, from ``seen``: the ledger rows (identity, application and batch columns) that
    may match the batch."""
    keys = batch.select(list(ledger.identity))
    if seen is None or seen.num_rows == 0:
        return keys.slice(0, 0), batch
    # delta-rs scans strings as string_view, which few compute kernels take
    seen_keys = seen.select(list(ledger.identity)).cast(keys.schema)
    mine = pc.and_(
        pc.equal(seen.column(APP_COLUMN).cast(pa.string()), ledger.app_id),
        pc.equal(seen.column(BATCH_COLUMN), batch_id),
    )
    own = seen_keys.filter(pc.fill_null(mine, False))
    return own, rows_joined(batch, ledger.identity, seen_keys, "left anti")


def stored_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with its dictionary-encoded columns as their values' type: the table's."""
    return pa.schema(
        [f.with_type(f.type.value_type) if pa.types.is_dictionary(f.type) else f for f in schema]
    )


def claim_rows(ledger: Claimant, rows: pa.Table, batch_id: int) -> pa.Table:
    """Ledger rows claiming the identities of ``rows`` for ``batch_id`` of the ledger's app."""
    claims = rows.select(list(ledger.identity))
    n = claims.num_rows
    now = dt.datetime.now(dt.UTC)
    return (
        claims.append_column(BATCH_COLUMN, pa.repeat(pa.scalar(batch_id, pa.int64()), n))
        .append_column(APPLIED_AT_COLUMN, pa.repeat(pa.scalar(now, pa.timestamp("us", "UTC")), n))
        .append_column(APP_COLUMN, pa.DictionaryArray.from_arrays(
            pa.repeat(pa.scalar(0, pa.int32()), n), pa.array([ledger.app_id], pa.string())
        ))
    )


def _commit_claims(
    ledger: LedgerLookup, table: deltalake.DeltaTable, fresh: pa.Table, batch_id: int
) -> None:
    """Append claims for ``fresh`` unless another commit got in since ``table``'s snapshot
    (then ``CommitFailedError``)."""
    rows = claim_rows(ledger, fresh, batch_id)
    # an int64 partition from pandas must land in the int32 column Spark created; the
    # application id stays dictionary-encoded (one value per batch: a fifth less to write)
    stored = table_schema(table)
    rows = rows.cast(stored.set(stored.get_field_index(APP_COLUMN),
                                rows.schema.field(APP_COLUMN)))
    deltalake.write_deltalake(
        table,
        rows,
        mode="append",
        # No rebase onto a concurrent commit: it may claim what this snapshot found free.
        commit_properties=commit_properties(ledger.app_id, batch_id, rebase=False),
    )
    ledger.location.committed(table, ledger.app_id, batch_id)
