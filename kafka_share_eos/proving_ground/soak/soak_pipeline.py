"""The soak's pipeline: the dedup store into Delta, with the ledger's own upkeep switched on.

``python -m kafka_share_eos.proving_ground.soak.soak_pipeline CONFIG NAME`` runs the verifier's
pipeline (:mod:`kafka_share_eos.proving_ground.verify.pipeline`) on :class:`SoakDedup`. The
identity ledger, the Delta table behind it, the journal and the s3a checkpoint live on the
object store; the dead letters live in PostgreSQL, so that a PostgreSQL outage strikes a path
the pipeline writes (each poison record of the steady producer goes there).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.pipeline import PipelineConfig, run
from kafka_share_eos.proving_ground.verify.records import effect_rows
from kafka_share_eos.proving_ground.verify.table_targets import DedupDelta
from kafka_share_eos.proving_ground.verify.targets import Coordinates, RunContext

RECORD_LOCKS = 200
"""``share.partition.max.record.locks`` of the soak's share group (Kafka's default: 2000)."""
POLL_RECORDS = 100
"""``kafka.max.poll.records`` of the soak's share consumers: the most one fetch acquires."""
LEDGER_WINDOW = 1_000
"""Offsets per partition the ledger keeps: above the group's record locks and one fetch, the
least :class:`~kafka_share_eos.ledger.retention.RetentionPolicy` allows
(docs/checkpoint-dedup.md), small enough to be filled within the warm-up."""
PRUNE_EVERY = 1
COMPACT_EVERY = 20
DEAD_LETTERS_TABLE = "soak_dead_letters"


class SoakDedup(DedupDelta):
    name = "dedup-delta-soak"
    description = ("CheckpointDedupStore pruning and compacting its Delta ledger, Delta append "
                   "sink, dead letters in PostgreSQL")
    needs_postgres = True

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from functools import partial

        from kafka_share_eos.ledger.retention import RetentionPolicy
        from kafka_share_eos.sinks.delta_append import DeltaAppendSink
        from kafka_share_eos.strategies import CheckpointDedupStore

        return CheckpointDedupStore(
            ctx.path("ledger"),
            DeltaAppendSink(ctx.path("effects-delta"), app_id=f"soak-sink-{pipeline}"),
            app_id=f"soak-{pipeline}",
            retention=RetentionPolicy(offset_window=LEDGER_WINDOW, min_age=None),
            prune_every=PRUNE_EVERY,
            compact_every=COMPACT_EVERY,
            transform=partial(effect_rows, poison_fails=True),
            dead_letters=dead_letters(ctx),
        )


def dead_letters(ctx: RunContext) -> Any:
    """The soak's dead letters: a table of the run's PostgreSQL database."""
    from kafka_share_eos.deadletter import SqlDeadLetters

    return SqlDeadLetters(ctx.postgres(), DEAD_LETTERS_TABLE)


def dead_lettered(ctx: RunContext) -> frozenset[Coordinates]:
    """``(partition, offset)`` of every record in the soak's dead letters."""
    sink = dead_letters(ctx)
    try:
        letters = sink.read()
    finally:
        sink.close()
    return frozenset(zip(letters["partition"].to_pylist(), letters["offset"].to_pylist(),
                         strict=True))


def main(arguments: list[str]) -> None:
    """Run pipeline ``NAME`` of the configuration file ``CONFIG`` on :class:`SoakDedup`."""
    TARGETS[SoakDedup.name] = SoakDedup
    run(PipelineConfig.load(Path(arguments[0])), arguments[1])


if __name__ == "__main__":
    main(sys.argv[1:])
