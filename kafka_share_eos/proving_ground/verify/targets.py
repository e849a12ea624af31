"""What a verifier target is: a strategy with its sink(s), and how it counts their effects.

Each target creates its tables before a run (:meth:`Target.setup`, in the verifier), builds the
``foreachBatch`` strategy inside the pipeline process (:meth:`Target.build`), and counts, per
record, how many times its effect landed in each sink (:meth:`Target.landed`). Counting reads the
sinks themselves, never what a strategy reported. The targets writing tables are in
:mod:`.table_targets` and :mod:`.iceberg_targets`, those writing Kafka topics in
:mod:`.kafka_targets`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_share_eos import faults
from kafka_share_eos._libs import deltalake
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.records import PlannedRecord, effect_rows

if TYPE_CHECKING:
    from kafka_share_eos.deadletter import DeadLetterSink

Coordinates = tuple[int, int]
"""A record's ``(partition, offset)`` (a run has one topic)."""

Landed = dict[str, Counter[Coordinates]]
"""Per sink: how many times each record's effect landed there."""

Produced = Mapping[Coordinates, PlannedRecord]
"""Every record a run produced, by where it landed in the topic."""

@dataclass(frozen=True)
class RunContext:
    """Where one run keeps its state: a directory or an object store and, for Postgres targets,
    a database."""

    run_dir: Path
    postgres_url: str | None = None
    bootstrap_servers: str | None = None
    source_topic: str = "verify"
    store_root: str | None = None
    """An object-store URI under which the run's tables, ledger, decision logs and dead letters
    live, instead of :attr:`run_dir`."""
    storage_options: Mapping[str, str] | None = None
    """The store's settings for the verifier's own reads; pipelines take theirs from their
    environment, so none is ever written into a run's configuration."""

    def postgres(self) -> str:
        """The run's Postgres database URL."""
        if self.postgres_url is None:
            raise ConfigurationError("this target needs a Postgres database, and the run has none")
        return self.postgres_url

    def kafka(self) -> str:
        """The run's brokers."""
        if self.bootstrap_servers is None:
            raise ConfigurationError("this target writes to Kafka, and the run names no broker")
        return self.bootstrap_servers

    def sqlite(self) -> str:
        """The run's SQLite database URL."""
        return f"sqlite:///{self.run_dir / 'effects.db'}"

    def path(self, name: str) -> str:
        """A location under the run's store root, or else its directory."""
        if self.store_root is not None:
            return f"{self.store_root.rstrip('/')}/{name}"
        return str(self.run_dir / name)

    def dead_letters(self) -> DeadLetterSink:
        """The run's dead letters, which every pipeline writes: a Delta table on the store, or
        an SQLite database in the directory."""
        from kafka_share_eos.deadletter import DeltaDeadLetters, SqlDeadLetters

        if self.store_root is not None:
            return DeltaDeadLetters(self.path("dead-letters"),
                                    storage_options=self.storage_options)
        return SqlDeadLetters(f"sqlite:///{self.run_dir / 'dead-letters.db'}")

    def delta_table(self, name: str) -> Any:
        """The Delta table ``name`` of the run, or None before it exists."""
        path = self.path(name)
        options = dict(self.storage_options or {})
        if not deltalake.DeltaTable.is_deltatable(path, options):
            return None
        return deltalake.DeltaTable(path, storage_options=options)


def screening(ctx: RunContext) -> dict[str, Any]:
    """Options every safe target's strategy runs with: the strategy decodes the effect rows
    itself, and what it cannot apply (the poison record) goes to the run's dead letters."""
    return {
        "transform": partial(effect_rows, poison_fails=True),
        "dead_letters": ctx.dead_letters(),
    }


def dead_lettered(ctx: RunContext) -> frozenset[Coordinates]:
    """``(partition, offset)`` of every record in the run's dead letters."""
    sink = ctx.dead_letters()
    try:
        letters = sink.read()
    finally:
        sink.close()
    return frozenset(
        (int(p), int(o))
        for p, o in zip(letters["partition"].to_pylist(), letters["offset"].to_pylist(),
                        strict=True)
    )


class Target(ABC):
    """A strategy with its sink(s)."""

    name: ClassVar[str]
    description: ClassVar[str]
    own_points: ClassVar[tuple[str, ...]] = ()
    """Crash points only this strategy has (on top of the common ones)."""
    hold_point: ClassVar[str] = faults.SINK_MID_WRITE
    """Where a batch is held past its records' lock to force a handoff: the strategy has read
    what it decides on (its table, ledger or staged work) and not committed yet."""
    needs_postgres: ClassVar[bool] = False
    needs_transactions: ClassVar[bool] = False
    """Whether the target needs Kafka's transaction isolation (Apache Kafka, not the mock)."""
    safe: ClassVar[bool] = True
    """False only for the control, which the verifier must catch duplicating."""
    delta_spark: ClassVar[bool] = False
    """Whether the pipeline's Spark session needs delta-spark (the delta-spark extra)."""
    delta_tables: ClassVar[tuple[str, ...]] = ()
    """The names (:meth:`RunContext.path`) of the Delta tables its strategy writes."""
    extra: ClassVar[str | None] = None
    """The extra its strategy needs beyond the verifier's own (``iceberg``): such a target is
    verified only when named."""
    storages: ClassVar[tuple[str, ...]] = ("local", "s3", "abfs")
    """The ``--storage`` kinds its tables can live on."""

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:  # noqa: B027
        """Create the tables the run's effects are counted in (before any pipeline starts);
        targets whose sinks create themselves need nothing."""

    @abstractmethod
    def build(self, ctx: RunContext, pipeline: str) -> Any:
        """The ``foreachBatch`` strategy of pipeline ``pipeline``, built in its process."""

    @abstractmethod
    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        """Per sink, how many times each record's effect landed."""
