"""The two-phase commit of one batch across several participants."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._process_local import ProcessLocal
from kafka_share_eos.errors import ConfigurationError, DecisionOverruledError
from kafka_share_eos.twophase.protocol import (
    Decision,
    DecisionLog,
    Outcome,
    Participant,
    Token,
    Transaction,
    check_name,
    txid_prefix,
)
from kafka_share_eos.twophase.recovery import RecoveryReport, resolve_in_doubt

logger = logging.getLogger("kafka_share_eos.twophase")

Prepare = Callable[[Participant, Transaction], Sequence[Token]]
"""Prepares one participant's part of a transaction and returns its token(s)."""

@dataclass(frozen=True)
class CommitResult:
    """The outcome of one batch: its transaction, every token, and what recovery did first.

    ``skipped`` counts, per participant, the rows of its tokens that another application
    committed between this prepare and this commit, so that this commit left them out.
    """

    txid: str
    tokens: tuple[Token, ...]
    recovery: RecoveryReport
    skipped: Mapping[str, int] = field(default_factory=dict)


class TransactionCoordinator(ProcessLocal):
    """Runs prepare → log decision → commit for each batch, after resolving what is in doubt.

    A pickled copy runs a recovery pass before its first batch, as a restarted application
    does: what the process it was copied from prepared may still be in doubt.

    Args:
        log: where decisions are stored durably.
        participants: the resources to keep in agreement (names must be unique).
        app_id: names this pipeline; recovery touches only transactions under this name, so two
            pipelines sharing a database, a Delta table or a decision log must use different
            ``app_id`` values.

    Raises:
        ConfigurationError: no participant, repeated participant names, or an unusable
            ``app_id``.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_maybe_in_doubt=lambda: True)

    def __init__(
        self, log: DecisionLog, participants: Sequence[Participant], app_id: str
    ) -> None:
        if not participants:
            raise ConfigurationError("participants must name at least one participant")
        names = [p.name for p in participants]
        repeated = sorted({n for n in names if names.count(n) > 1})
        if repeated:
            raise ConfigurationError(f"participant names must be unique, repeated: {repeated}")
        self.log = log
        self.participants = tuple(participants)
        self.app_id = check_name("app_id", app_id)
        self.prefix = txid_prefix(app_id)
        # Whether work of this application may be in doubt without a recovery pass having
        # seen it: before the first pass, after a batch that did not finish, and while batches
        # prepare elsewhere (a task still running after its job failed may prepare late).
        self._maybe_in_doubt = True

    def recover(self) -> RecoveryReport:
        """Resolve every transaction of this application left in doubt by an earlier run.

        Raises:
            TwoPhaseCommitError: a participant could not finish a transaction; the decisions
                stay in the log for the next pass.
        """
        report = resolve_in_doubt(self.log, self.participants, self.prefix)
        self._maybe_in_doubt = False
        if report.resolved:
            logger.warning(
                "%s: recovered %d in-doubt transaction part(s): %d committed, %d rolled back",
                self.app_id, report.resolved, len(report.committed), len(report.aborted),
            )
        return report

    def run(self, rows: pa.Table, batch_id: int, key_columns: Sequence[str]) -> CommitResult:
        """Apply ``rows`` (unique on ``key_columns``) to every participant, all or nothing.

        A recovery pass runs first unless every earlier batch of this coordinator finished.

        Raises:
            DecisionOverruledError: another process stored an ABORT decision for this
                transaction first; nothing of the batch was applied.
        """
        return self._run(batch_id, key_columns, lambda p, txn: [p.prepare(rows, txn)],
                         prepared_here=True)

    def run_with(self, batch_id: int, key_columns: Sequence[str], prepare: Prepare) -> CommitResult:
        """Like :meth:`run`, with ``prepare(participant, txn)`` producing each one's tokens.

        This lets a participant prepare somewhere else than in this process, e.g. one token
        per Spark partition prepared on the executors.

        Every batch starts with a recovery pass: work prepared elsewhere may outlive the batch
        that asked for it.

        Raises:
            DecisionOverruledError: another process stored an ABORT decision for this
                transaction first; nothing of the batch was applied.
        """
        return self._run(batch_id, key_columns, prepare, prepared_here=False)

    def _run(
        self, batch_id: int, key_columns: Sequence[str], prepare: Prepare, *, prepared_here: bool
    ) -> CommitResult:
        recovery = self.recover() if self._maybe_in_doubt else RecoveryReport()
        self._maybe_in_doubt = True
        result = self._decide(recovery, Transaction.new(self.app_id, batch_id, key_columns),
                              prepare, at_once=prepared_here)
        self._maybe_in_doubt = not prepared_here
        return result

    def _decide(
        self, recovery: RecoveryReport, txn: Transaction, prepare: Prepare, *, at_once: bool
    ) -> CommitResult:
        """Prepare ``txn`` everywhere, store the decision and commit."""
        batch_id = txn.batch_id
        tokens = self._prepare_all(txn, prepare, at_once)
        if all(t.rows_written == 0 for t in tokens):
            # Nothing prepared anywhere (e.g. a replayed batch): there is nothing to decide.
            return CommitResult(txn.txid, tokens, recovery)
        faults.maybe_crash(faults.TWO_PHASE_AFTER_PREPARE)
        stored = self.log.write(Decision(txn.txid, batch_id, Outcome.COMMIT, tokens))
        if stored.outcome is not Outcome.COMMIT:
            self._roll_back(txn)
            raise DecisionOverruledError(
                f"{self.app_id}: transaction {txn.txid} of batch {batch_id} was decided ABORT by "
                "another process before this run could commit it, and was rolled back: nothing "
                "of the batch was applied, Spark applies it when the query runs it again. "
                "Expected after `kafka-share-eos twophase recover` resolved this application's "
                f"transactions; otherwise another application uses app_id {self.app_id!r} with "
                "this decision log: give each application its own app_id"
            )
        faults.maybe_crash(faults.TWO_PHASE_AFTER_DECISION)
        participants = {p.name: p for p in self.participants}
        skipped: dict[str, int] = {}
        for index, token in enumerate(tokens):
            if index == 1:
                faults.maybe_crash(faults.TWO_PHASE_BETWEEN_COMMITS)
            left_out = participants[token.participant].commit(token) or 0
            skipped[token.participant] = skipped.get(token.participant, 0) + left_out
        faults.maybe_crash(faults.TWO_PHASE_AFTER_COMMIT)
        self.log.delete(txn.txid)
        return CommitResult(txn.txid, tokens, recovery, skipped)

    def _prepare_all(self, txn: Transaction, prepare: Prepare, at_once: bool) -> tuple[Token, ...]:
        """Every participant prepares, the first one on this thread; ``at_once``, the others at
        the same time on threads of their own.

        Prepared here, their work is independent and mostly waits on something else (a database
        server, Arrow writing files), so a batch takes about as long as its slowest prepare.
        Prepares that run Spark jobs go one after the other: a job started from another thread
        would lose the streaming query's job properties.
        """
        first, *others = self.participants
        try:
            with ThreadPoolExecutor(max(len(others), 1), "kse-2pc-prepare") as pool:
                # Leaving the block waits for every prepare, also when one failed: the
                # rollback below must come after all of them.
                later = ([pool.submit(prepare, p, txn).result for p in others] if at_once
                         else [functools.partial(prepare, p, txn) for p in others])
                tokens = list(prepare(first, txn))
                if others:
                    faults.maybe_crash(faults.TWO_PHASE_BETWEEN_PREPARES)
                for finish in later:
                    tokens.extend(finish())
        except BaseException:
            # Presumed abort: roll back everything prepared under this transaction, including
            # work whose token never came back (a failed Spark job).
            self._roll_back(txn)
            raise
        return tuple(tokens)

    def _roll_back(self, txn: Transaction) -> None:
        # If this fails too, the next recovery pass rolls the transaction back.
        try:
            resolve_in_doubt(self.log, self.participants, txn.txid)
        except Exception:
            logger.exception("%s: rolling back %s failed", self.app_id, txn.txid)
