"""Two-phase commit for effects that are not idempotent.

:class:`TransactionCoordinator` prepares a batch on every :class:`Participant`, logs the commit
decision durably (:class:`FileDecisionLog` or :class:`PostgresDecisionLog`), then commits; on
every batch it first resolves what a crashed run left prepared. The foreachBatch strategy built
on it is :class:`kafka_share_eos.strategies.two_phase_commit.TwoPhaseCommitCoordinator`.

The participants and the Postgres decision log live in their modules (:mod:`.postgres`,
:mod:`.outbox`, :mod:`.delta`, :mod:`.postgres_log`) and import from ``kafka_share_eos`` too;
they load SQLAlchemy or deltalake when built. :mod:`.spark` prepares Postgres participants on
the Spark executors.
"""

from __future__ import annotations

from kafka_share_eos.errors import DecisionOverruledError, TwoPhaseCommitError
from kafka_share_eos.twophase.coordinator import CommitResult, Prepare, TransactionCoordinator
from kafka_share_eos.twophase.file_log import FileDecisionLog
from kafka_share_eos.twophase.protocol import (
    Decision,
    DecisionLog,
    Outcome,
    Participant,
    Token,
    Transaction,
    txid_prefix,
)
from kafka_share_eos.twophase.recovery import RecoveryReport, resolve_in_doubt

__all__ = [
    "CommitResult",
    "Decision",
    "DecisionLog",
    "DecisionOverruledError",
    "FileDecisionLog",
    "Outcome",
    "Participant",
    "Prepare",
    "RecoveryReport",
    "Token",
    "Transaction",
    "TransactionCoordinator",
    "TwoPhaseCommitError",
    "resolve_in_doubt",
    "txid_prefix",
]
