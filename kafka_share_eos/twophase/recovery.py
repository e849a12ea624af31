"""Resolving in-doubt transactions left behind by a crashed coordinator.

The rule is *presumed abort*: a prepared transaction is committed only if the decision log holds
a commit decision that lists its token; every other prepared transaction of the application is
rolled back. Since the coordinator writes the decision before telling anyone to commit, a
transaction some participant may already have committed always has its decision in the log.

Rolling back is *fenced*: a transaction without a decision first gets an ABORT decision, and only
if that decision is the stored one (the log's first writer wins) is anything rolled back. A
coordinator still alive commits only when its COMMIT decision is the stored one, so the two can
never both act: anyone may resolve an application's transactions, even while it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_share_eos.twophase.protocol import (
    Decision,
    DecisionLog,
    Outcome,
    Participant,
    Token,
)


@dataclass(frozen=True)
class RecoveryReport:
    """What one recovery pass did.

    Attributes:
        committed: the tokens committed (a commit decision listed them).
        aborted: the tokens rolled back.
        decisions_forgotten: decisions deleted because their transactions were resolved.
        aborts_written: transactions this pass decided ABORT (they had no decision).
    """

    committed: tuple[Token, ...] = ()
    aborted: tuple[Token, ...] = ()
    decisions_forgotten: int = 0
    aborts_written: tuple[str, ...] = ()

    @property
    def resolved(self) -> int:
        """Prepared transactions finished by this pass."""
        return len(self.committed) + len(self.aborted)

    def transactions(self) -> dict[str, Outcome]:
        """Each transaction this pass resolved, with what it did: commit or abort."""
        done = {t.txid: Outcome.ABORT for t in self.aborted}
        done.update((t.txid, Outcome.COMMIT) for t in self.committed)
        return dict(sorted(done.items()))


def resolve_in_doubt(
    log: DecisionLog, participants: Sequence[Participant], prefix: str, *, forget: bool = True
) -> RecoveryReport:
    """Commit or abort every transaction under ``prefix`` still prepared by ``participants``.

    A transaction without a decision is decided ABORT first (first writer wins); if its
    coordinator stored COMMIT in the meantime, the transaction is committed instead.

    With ``forget`` (the application's own recovery), the decisions under ``prefix`` are
    deleted once every participant is resolved; an exception leaves them for the next pass.
    Whoever resolves another, possibly live, application's transactions must keep them
    (``forget=False``): a deleted ABORT decision would no longer stop that application's
    coordinator from committing work already rolled back.

    Raises:
        TwoPhaseCommitError: a participant could not commit or abort its part.
    """
    committed: list[Token] = []
    aborted: list[Token] = []
    aborts_written: list[str] = []
    decisions: dict[str, Decision] = {}
    for participant in participants:
        for token in participant.recover(prefix):
            if token.txid not in decisions:
                decision = log.read(token.txid)
                if decision is None:
                    decision = log.write(Decision.abort(token.txid))
                    if decision.outcome is Outcome.ABORT:
                        aborts_written.append(token.txid)
                decisions[token.txid] = decision
            logged = decisions[token.txid].committed_token(token)
            if logged is not None:
                participant.commit(logged)
                committed.append(logged)
            else:
                participant.abort(token)
                aborted.append(token)
    stale = log.txids(prefix) if forget else []
    for txid in stale:
        log.delete(txid)
    return RecoveryReport(tuple(committed), tuple(aborted), len(stale), tuple(aborts_written))
