"""The crash points the verifier knows, what each one means, and which targets have which."""

from __future__ import annotations

from kafka_share_eos.verify.targets import TARGETS

RANDOM_KILL = "random-kill"
"""Pseudo crash point: SIGKILL the pipeline's process group from outside at a random moment."""

COMMON_POINTS: dict[str, str] = {
    "source.after_poll": "source runner: records polled, not yet in the journal",
    "source.after_journal": "source runner: batch durable in the journal, offset not returned "
    "to Spark (before the sink)",
    "source.before_ack": "source runner: Spark committed the batch, nothing acknowledged yet",
    "source.during_ack": "source runner: part of the batch acknowledged and committed",
    "sink.mid_write": "sink: part of the batch written or staged, not committed",
    "strategy.after_write": "strategy: sink write committed, foreachBatch not returned "
    "(Spark has not committed the batch)",
}

OWN_POINTS: dict[str, str] = {
    "2pc.postgres.before_prepare": "2PC: Postgres effect run, PREPARE TRANSACTION not issued",
    "2pc.between_prepares": "2PC: one participant prepared, the next not",
    "2pc.delta.after_stage": "2PC: Delta files staged, not committed",
    "2pc.after_prepare": "2PC: every participant prepared, no decision logged",
    "2pc.after_decision": "2PC: commit decision logged, nothing committed",
    "2pc.between_commits": "2PC: one participant committed, the next not",
    "2pc.after_commit": "2PC: every participant committed, decision not cleared",
    "dedup.before_sink": "dedup store: new rows found, sink not called",
    "dedup.after_sink": "dedup store: sink appended, identities not in the ledger",
    "dedup.after_ledger": "dedup store: ledger recorded, foreachBatch not returned",
}

DESCRIPTIONS: dict[str, str] = {
    **COMMON_POINTS,
    **OWN_POINTS,
    RANDOM_KILL: "SIGKILL of the whole pipeline from outside at a random moment",
}


def points_of(target: str) -> tuple[str, ...]:
    """Every crash point of ``target``, common ones first, then its own, then random kills."""
    return (*COMMON_POINTS, *TARGETS[target].own_points, RANDOM_KILL)
