"""Resolving in-doubt transactions left behind by a crashed coordinator.

The rule is *presumed abort*: a prepared transaction is committed only if the decision log holds
a commit decision that lists its token; every other prepared transaction of the application is
rolled back. Since the coordinator writes the decision before telling anyone to commit, a
transaction some participant may already have committed always has its decision in the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kafka_share_eos.twophase.protocol import Decision, DecisionLog, Participant, Token


@dataclass(frozen=True)
class RecoveryReport:
    """What one recovery pass did."""

    committed: tuple[Token, ...] = ()
    aborted: tuple[Token, ...] = ()
    decisions_forgotten: int = 0

    @property
    def resolved(self) -> int:
        """Prepared transactions finished by this pass."""
        return len(self.committed) + len(self.aborted)


def resolve_in_doubt(
    log: DecisionLog, participants: Sequence[Participant], prefix: str
) -> RecoveryReport:
    """Commit or abort every transaction under ``prefix`` still prepared by ``participants``.

    Once every participant is resolved, the decisions under ``prefix`` are no longer needed and
    are deleted. An exception leaves them in place for the next pass.
    """
    committed: list[Token] = []
    aborted: list[Token] = []
    decisions: dict[str, Decision | None] = {}
    for participant in participants:
        for token in participant.recover(prefix):
            if token.txid not in decisions:
                decisions[token.txid] = log.read(token.txid)
            decision = decisions[token.txid]
            logged = None if decision is None else decision.committed_token(token)
            if logged is not None:
                participant.commit(logged)
                committed.append(logged)
            else:
                participant.abort(token)
                aborted.append(token)
    stale = log.txids(prefix)
    for txid in stale:
        log.delete(txid)
    return RecoveryReport(tuple(committed), tuple(aborted), len(stale))
