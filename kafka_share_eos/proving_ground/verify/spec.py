"""What a verification run is asked to do (:class:`RunSpec`, its :class:`Mix`) and what it found
(:class:`RunResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_share_eos.proving_ground.verify import defaults
from kafka_share_eos.proving_ground.verify.score import Score


@dataclass(frozen=True)
class Mix:
    """What else goes on during a run besides the crashes."""

    pipelines: int = defaults.PIPELINES
    """Applications consuming the run's share group into the same sinks; the first is the one
    crashed at the run's point."""
    session_drops: bool = False
    slow_sink: bool = False
    bad_records: bool = False
    random_kills: bool = False
    after_journal: bool = False
    """Pipelines ACCEPT records right after the journal write (``acknowledge=afterJournal``,
    polling ahead while Spark runs a batch) instead of after Spark's commit."""
    consumers: int = defaults.CONSUMERS
    """Share consumers per pipeline (the source's ``consumers``): above 1 they poll in executor
    tasks, under afterJournal."""
    handoffs: bool = False
    """Every pipeline start stalls once with a batch at the strategy's hold point (read what it
    decides on, not committed): its share consumers stop answering past the session timeout,
    so the broker hands its records to another pipeline while the batch still holds them."""


@dataclass(frozen=True)
class RunSpec:
    """One run of one cell of the matrix."""

    target: str
    point: str
    index: int
    seed: int
    records: int = defaults.RECORDS
    crashes: int = defaults.CRASHES
    per_trigger: int = defaults.PER_TRIGGER
    partitions: int = defaults.PARTITIONS
    mix: Mix = field(default_factory=Mix)

    @property
    def key(self) -> str:
        """``target-point-index``, also the run's directory name."""
        return f"{self.target}-{self.point}-{self.index}"

    @property
    def rng_seed(self) -> str:
        """Seed of everything random in this run (records, crash hits, kill moments)."""
        return f"{self.seed}:{self.target}:{self.point}:{self.index}"


@dataclass
class RunResult:
    """What happened in a run and what the sinks hold afterwards."""

    spec: RunSpec
    score: Score
    starts: int = 0
    crashes: int = 0
    kills: int = 0
    failed_starts: int = 0
    session_drops: int = 0
    absorbed: int = 0
    redelivered: int = 0
    seconds: float = 0.0
    cycle_seconds: list[float] = field(default_factory=list)
    consumers: list[dict[str, int]] = field(default_factory=list)
    """Records journaled per consumer slot by the crashed pipeline, over its runs."""
    applied: dict[str, int] = field(default_factory=dict)
    """Records each pipeline (application) applied, by pipeline name."""
    held: dict[str, int] = field(default_factory=dict)
    """Distinct records each pipeline held in batches its ``foreachBatch`` started, applied or
    not (a batch killed mid-way held its records too), by name."""
    handoffs: int = 0
    """Records that batches of more than one pipeline held: the broker handed them on while
    one application's batch still held them (or after it was killed mid-batch)."""
    members: dict[str, int] = field(default_factory=dict)
    """Records each share-group member journaled, as ``pipeline/member`` (a pipeline's
    runner consumer is ``pipeline/runner``)."""
    fault: dict[str, Any] | None = None
    """In a fault run: what the outage did, when, and the stall (see
    :meth:`kafka_share_eos.proving_ground.verify.outages.driver.FaultDriver.report`)."""
    connect: dict[str, int] = field(default_factory=dict)
    """In a Spark Connect run, what its crashes met (see
    :meth:`kafka_share_eos.proving_ground.verify.connect.ConnectCrashes.report`)."""
    error: str | None = None

    @property
    def ok(self) -> bool:
        """No duplicate, no loss, no error."""
        return self.error is None and self.score.ok
