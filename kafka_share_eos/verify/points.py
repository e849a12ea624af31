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

SLOT_POINTS: dict[str, str] = {
    "slot.after_poll": "executor task (consumers=N): records polled, slot segment not written",
    "slot.after_segment": "executor task: slot segment durable, nothing acknowledged",
    "slot.during_ack": "executor task: part of the slot acknowledged and committed",
    "slot.reading_other": "executor task: reading a slot segment another attempt or action "
    "wrote",
}
"""With ``consumers`` above 1 there is no consumer in the source runner: these replace the
``source.*`` points."""

OWN_POINTS: dict[str, str] = {
    "2pc.postgres.before_prepare": "2PC: Postgres effect run, PREPARE TRANSACTION not issued",
    "2pc.between_prepares": "2PC: the first participant prepared, the others at any stage",
    "2pc.delta.after_stage": "2PC: Delta files staged, not committed",
    "2pc.after_prepare": "2PC: every participant prepared, no decision logged",
    "2pc.after_decision": "2PC: commit decision logged, nothing committed",
    "2pc.between_commits": "2PC: one participant committed, the next not",
    "2pc.after_commit": "2PC: every participant committed, decision not cleared",
    "dedup.before_sink": "dedup store: new identities claimed in the ledger, sink not called",
    "dedup.after_sink": "dedup store: sink appended, foreachBatch not returned",
}

DESCRIPTIONS: dict[str, str] = {
    **COMMON_POINTS,
    **SLOT_POINTS,
    **OWN_POINTS,
    RANDOM_KILL: "SIGKILL of the whole pipeline from outside at a random moment",
}


def points_of(target: str, consumers: int = 1) -> tuple[str, ...]:
    """Every crash point of ``target`` read by ``consumers`` consumers: the source's (the
    runner's, or the executor tasks' with several), the sink's, its own, then random kills."""
    source = [p for p in COMMON_POINTS if not p.startswith("source.")] if consumers > 1 else []
    common = (*SLOT_POINTS, *source) if consumers > 1 else tuple(COMMON_POINTS)
    return (*common, *TARGETS[target].own_points, RANDOM_KILL)
