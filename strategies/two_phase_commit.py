"""Exactly-once effects that are not idempotent, through two-phase commit.

Upserts make a repeated write harmless. ``balance = balance + amount``, appending to a ledger, or
writing to two stores that must agree are different: each record must take effect exactly once,
everywhere or nowhere. :class:`TwoPhaseCommitCoordinator` prepares each micro-batch on every
participant (each keeps a ledger of applied record keys inside the prepared work, so a
redelivered record is skipped), logs the commit decision durably, then commits; before each
batch it resolves whatever a crashed run left prepared.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Unpack

import pyarrow as pa

from kafka_share_eos.errors import SinkConfigurationError
from kafka_share_eos.sinks import KnowsApplied, UpsertOutcome
from kafka_share_eos.strategies.base import BatchStrategy, StrategyOptions
from kafka_share_eos.strategies.identity import RecordIdentity
from kafka_share_eos.strategies.report import BatchReport
from kafka_share_eos.twophase import (
    CommitResult,
    DecisionLog,
    FileDecisionLog,
    Participant,
    RecoveryReport,
    Token,
    Transaction,
    TransactionCoordinator,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

WRITE_PATH = "two-phase-commit"
PrepareOn = Literal["driver", "executors"]


def _rows_written(result: CommitResult) -> int:
    """Rows applied, counted per participant (they agree on what was new, unless another
    application committed some rows in between: those count for that application)."""
    per_participant: dict[str, int] = {}
    for token in result.tokens:
        per_participant[token.participant] = (
            per_participant.get(token.participant, 0) + token.rows_written
        )
    for participant, skipped in result.skipped.items():
        per_participant[participant] -= skipped
    return max(per_participant.values(), default=0)


class TwoPhaseCommitCoordinator(BatchStrategy):
    """A ``foreachBatch`` strategy applying each batch to all participants, all or nothing.

    Example::

        coordinator = TwoPhaseCommitCoordinator(
            log="/checkpoints/payments/twophase",
            participants=[
                PostgresParticipant(url, "UPDATE accounts SET balance = balance + :amount"
                                         " WHERE id = :account"),
                DeltaParticipant("/lake/payments"),
            ],
            app_id="payments",
        )
        stream.writeStream.foreachBatch(coordinator).start()

    Args:
        log: a :class:`~kafka_share_eos.twophase.DecisionLog`, or a directory URI for a
            :class:`~kafka_share_eos.twophase.FileDecisionLog` (next to the checkpoint).
        participants: the resources to apply each batch to; names must be unique.
        app_id: names the pipeline (letters, digits, ``_``, ``-``): recovery resolves only
            transactions of its own ``app_id``, so every pipeline sharing a database, a Delta
            table or a decision log needs its own. Required because a shared default would let
            one pipeline's recovery roll back another's transaction in flight.
        key_columns: the columns identifying a record; ``(topic, partition, offset)`` by default.
        prepare_on: ``"driver"`` (default) collects each Spark batch as Arrow and prepares it in
            the driver; ``"executors"`` prepares every Spark partition in its own Postgres
            transaction on the executors (Postgres participants only; Delta must stay in the
            driver).
        options: see :class:`StrategyOptions` (``transform``, ``dead_letters``, ...). With
            ``transform`` or ``dead_letters`` batches prepare in the driver; rows the
            participants refuse still fail the batch (a prepare cannot be checked row by row).
        recover_on_start: resolve what an earlier run left prepared right away, rather than at
            the first batch: prepared transactions hold their row locks until resolved.

    Raises:
        ConfigurationError: no participant, repeated participant names, or an ``app_id``
            other than 1-64 letters, digits, ``_`` and ``-``.
        SinkConfigurationError: empty or repeated ``key_columns``, a ``prepare_on`` other than
            ``"driver"`` and ``"executors"``, or ``"executors"`` with a participant other than
            Postgres, or with ``transform`` or ``dead_letters``.
        TwoPhaseCommitError: with ``recover_on_start``, a participant could not finish a
            transaction an earlier run left in doubt.
        DatabaseUnreachableError: a Postgres participant's or decision log's database could
            not be connected to (checked when the coordinator is built, unless
            ``check_on_create=False``).
        TargetTableError: a Delta participant's location is a file, or a directory of other
            files.
        PreparedTransactionsDisabledError: a Postgres participant's server has
            ``max_prepared_transactions = 0``.
    """

    def __init__(
        self,
        log: DecisionLog | str,
        participants: Sequence[Participant],
        *,
        app_id: str,
        key_columns: Sequence[str] | None = None,
        prepare_on: PrepareOn = "driver",
        recover_on_start: bool = True,
        **options: Unpack[StrategyOptions],
    ) -> None:
        super().__init__(RecordIdentity.of(key_columns), "TwoPhaseCommitCoordinator", **options)
        if prepare_on == "executors" and self.screens_rows:
            raise SinkConfigurationError(
                "prepare_on='executors' cannot be combined with transform or dead_letters: "
                "rows are screened in the driver (use prepare_on='driver')"
            )
        if prepare_on not in ("driver", "executors"):
            raise SinkConfigurationError(
                f"prepare_on must be 'driver' or 'executors', got {prepare_on!r}"
            )
        if prepare_on == "executors":
            from kafka_share_eos.twophase.postgres import PostgresParticipant

            others = [p.name for p in participants if not isinstance(p, PostgresParticipant)]
            if others:
                raise SinkConfigurationError(
                    f"prepare_on='executors' needs Postgres participants only; {others} must "
                    "prepare in the driver (use prepare_on='driver')"
                )
        decision_log = FileDecisionLog(log) if isinstance(log, str) else log
        self.transactions = TransactionCoordinator(decision_log, participants, app_id)
        self.prepare_on = prepare_on
        self.last_commit: CommitResult | None = None
        self._checked()
        if recover_on_start:
            self.transactions.recover()

    def recover(self) -> RecoveryReport:
        """Resolve transactions a crashed run left prepared (also done before a batch that
        follows one which did not finish, and before every batch prepared on the executors)."""
        return self.transactions.recover()

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Apply a Spark micro-batch, prepared in the driver or on the executors."""
        if self.prepare_on == "driver":
            return super().apply_dataframe(batch_df, batch_id)
        from kafka_share_eos.twophase.postgres import PostgresParticipant
        from kafka_share_eos.twophase.spark import ExecutorPrepare, prepare_on_executors

        started = time.perf_counter()
        self._ensure_ready(batch_df.limit(0).toArrow().schema)
        prepared: list[ExecutorPrepare] = []

        def prepare(participant: Participant, txn: Transaction) -> Sequence[Token]:
            assert isinstance(participant, PostgresParticipant)
            prepared.append(prepare_on_executors(batch_df, participant, self.identity, txn))
            return prepared[-1].tokens

        result = self.transactions.run_with(batch_id, self.identity.key_columns, prepare)
        self.last_commit = result
        rows_in, duplicates = prepared[0].rows_in, prepared[0].duplicates_in_batch
        written = _rows_written(result)
        outcome = UpsertOutcome(written, rows_in - duplicates - written, f"{WRITE_PATH}-executors")
        return self._record(batch_id, rows_in, duplicates, outcome, started)

    def _targets(self) -> Sequence[object]:
        return (self.transactions.log, *self.transactions.participants)

    def _prepare(self, schema: pa.Schema) -> None:
        # Nothing to check up front: participants create their ledgers and tables from the
        # first batch they prepare, after the coordinator's recovery pass.
        return

    def _applied(self, keys: pa.Table) -> list[bool] | None:
        lookups = [p.applied for p in self.transactions.participants if isinstance(p, KnowsApplied)]
        if not lookups:
            return None
        # After recovery every participant agrees on each key: all of them committed a
        # decided batch, or none did.
        self.transactions.recover()
        held = [lookup(keys) for lookup in lookups]
        return [any(flags) for flags in zip(*held, strict=True)]

    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        result = self.transactions.run(table, batch_id, self.identity.key_columns)
        self.last_commit = result
        written = _rows_written(result)
        return UpsertOutcome(written, table.num_rows - written, WRITE_PATH)
