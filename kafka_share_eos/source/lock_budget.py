"""The lock budget: how much of the broker's record lock a batch uses before it is acknowledged.

Records stay acquired from the poll that returned them until the source ACCEPTs them: under
``acknowledge=afterCommit`` that is the whole micro-batch (planning, ``foreachBatch``, Spark's
commit, up to the next planning); under ``afterJournal`` only the journal write. A batch that
outlives the lock has its records taken back and redelivered, so the source measures every
batch against ``lockDurationMs`` and warns while there is still a margin.
"""

from __future__ import annotations

import logging

from kafka_share_eos.source.options import AckPolicy, LockBudgetAction, SourceOptions

log = logging.getLogger("kafka_share_eos.source")

_LONGER_LOCK = (
    "raise the share group's record lock duration (share.record.lock.duration.ms, broker "
    "default group.share.record.lock.duration.ms) and lockDurationMs with it"
)
_ADVICE = {
    AckPolicy.AFTER_COMMIT: f"{_LONGER_LOCK}, lower kafka.max.poll.records (a batch is one "
    "poll), or use acknowledge=afterJournal",
    AckPolicy.AFTER_JOURNAL: f"{_LONGER_LOCK}, or lower kafka.max.poll.records: the journal "
    "write is this slow",
}


class LockBudget:
    """Judges each batch's lock holding time and chooses the policy of the next planning.

    Args:
        options: the stream's options (``lockDurationMs``, ``lockBudgetWarnFraction``,
            ``lockBudgetAction`` and the configured ``acknowledge`` policy).
    """

    def __init__(self, options: SourceOptions) -> None:
        self._lock_ms = options.lock_duration_ms
        self._warn_fraction = options.lock_budget_warn_fraction
        self._action = options.lock_budget_action
        self._policy = options.ack_policy

    @property
    def policy(self) -> AckPolicy:
        """The acknowledgement policy the next batch is planned with."""
        return self._policy

    def observe(self, seq: int, held_ms: float, policy: AckPolicy) -> float:
        """Record that batch ``seq``, planned under ``policy``, held its locks ``held_ms``.

        Logs a warning when the batch used more than the warn fraction of the lock and, with
        ``lockBudgetAction=switchToAfterJournal``, switches later plannings to afterJournal.

        Returns:
            The fraction of the lock duration the batch used (above 1: its locks expired).
        """
        used = held_ms / self._lock_ms
        if used <= self._warn_fraction:
            return used
        expired = " (longer than the lock: its records may be redelivered)" if used >= 1 else ""
        log.warning(
            "kafka-share batch %d held its records for %.0f ms, %.0f%% of the %d ms record "
            "lock (lockDurationMs), above the lockBudgetWarnFraction of %.0f%%%s: %s",
            seq, held_ms, used * 100, self._lock_ms, self._warn_fraction * 100, expired,
            _ADVICE[policy],
        )
        if (
            self._action is LockBudgetAction.SWITCH_TO_AFTER_JOURNAL
            and self._policy is AckPolicy.AFTER_COMMIT
        ):
            self._policy = AckPolicy.AFTER_JOURNAL
            log.warning(
                "kafka-share source switches to acknowledge=afterJournal after batch %d "
                "(lockBudgetAction=switchToAfterJournal): later batches are ACCEPTed right "
                "after their journal write, for the rest of this run",
                seq,
            )
        return used
