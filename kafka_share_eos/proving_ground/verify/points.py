"""The crash points the verifier knows, what each one means, and which targets have which."""

from __future__ import annotations

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.verify.known_targets import TARGETS

RANDOM_KILL = "random-kill"
"""Pseudo crash point: SIGKILL the pipeline's process group from outside at a random moment."""

COMMON_POINTS: dict[str, str] = {
    faults.AFTER_POLL: "source runner: records polled, not yet in the journal",
    faults.AFTER_JOURNAL: "source runner: batch durable in the journal, offset not returned "
    "to Spark (before the sink)",
    faults.BEFORE_ACK: "source runner: Spark committed the batch, nothing acknowledged yet",
    faults.DURING_ACK: "source runner: part of the batch acknowledged and committed",
    faults.SINK_MID_WRITE: "sink: part of the batch written or staged, not committed",
    faults.STRATEGY_AFTER_WRITE: "strategy: sink write committed, foreachBatch not returned "
    "(Spark has not committed the batch)",
}

SLOT_POINTS: dict[str, str] = {
    faults.SLOT_AFTER_POLL: "executor task (consumers=N): records polled, slot segment not "
    "written",
    faults.SLOT_AFTER_SEGMENT: "executor task: slot segment durable, nothing acknowledged",
    faults.SLOT_DURING_ACK: "executor task: part of the slot acknowledged and committed",
    faults.SLOT_READING_OTHER: "executor task: reading a slot segment another attempt or action "
    "wrote",
}
"""With ``consumers`` above 1 there is no consumer in the source runner: these replace the
``source.*`` points."""

OWN_POINTS: dict[str, str] = {
    faults.TWO_PHASE_POSTGRES_BEFORE_PREPARE: "2PC: Postgres effect run, PREPARE TRANSACTION "
    "not issued",
    faults.TWO_PHASE_BETWEEN_PREPARES: "2PC: the first participant prepared, the others at any "
    "stage",
    faults.TWO_PHASE_DELTA_AFTER_STAGE: "2PC: Delta files staged, not committed",
    faults.TWO_PHASE_AFTER_PREPARE: "2PC: every participant prepared, no decision logged",
    faults.TWO_PHASE_AFTER_DECISION: "2PC: commit decision logged, nothing committed",
    faults.TWO_PHASE_BETWEEN_COMMITS: "2PC: one participant committed, the next not",
    faults.TWO_PHASE_AFTER_COMMIT: "2PC: every participant committed, decision not cleared",
    faults.DEDUP_BEFORE_SINK: "dedup store: new identities claimed in the ledger, sink not called",
    faults.DEDUP_AFTER_SINK: "dedup store: sink appended, foreachBatch not returned",
}

CONNECT_SERVER_KILL = "connect.server-kill"
CONNECT_CLIENT_KILL = "connect.client-kill"
CONNECT_WORKER_KILL = "connect.worker-kill"

CONNECT_POINTS: dict[str, str] = {
    CONNECT_SERVER_KILL: "Spark Connect: the server (the query's driver, its source runner "
    "and Python workers) SIGKILLed while a batch is held mid-strategy, started again on the "
    "same URL, the query started again by a new client",
    CONNECT_CLIENT_KILL: "Spark Connect: the client SIGKILLed while its query's batch is held "
    "mid-strategy; a new client starts the query again on the same checkpoint while the "
    "orphaned query still runs, or after it ended",
    CONNECT_WORKER_KILL: "Spark Connect: the server's foreachBatch worker SIGKILLed while a "
    "batch is held mid-strategy",
}
"""Crash kinds of a pipeline run in a Spark Connect session (``verify --spark-connect``): each
holds a seeded random batch at the strategy's hold point, then kills a process of the session
there."""

DESCRIPTIONS: dict[str, str] = {
    **COMMON_POINTS,
    **SLOT_POINTS,
    **OWN_POINTS,
    RANDOM_KILL: "SIGKILL of the whole pipeline from outside at a random moment",
    **CONNECT_POINTS,
}


def points_of(target: str, consumers: int = 1, spark_connect: bool = False
              ) -> tuple[str, ...]:
    """Every crash point of ``target`` read by ``consumers`` consumers: the source's (the
    runner's, or the executor tasks' with several), the sink's, its own, then random kills; in
    a Spark Connect session, the Connect kinds."""
    if spark_connect:
        return tuple(CONNECT_POINTS)
    source = [p for p in COMMON_POINTS if not p.startswith("source.")] if consumers > 1 else []
    common = (*SLOT_POINTS, *source) if consumers > 1 else tuple(COMMON_POINTS)
    return (*common, *TARGETS[target].own_points, RANDOM_KILL)
