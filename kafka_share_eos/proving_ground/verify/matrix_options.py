"""What to verify and how hard: the options of a verification matrix, checked in one place, and
the cells and runs they expand to."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify import defaults
from kafka_share_eos.proving_ground.verify.broker_choice import BROKER_KINDS, BrokerKind
from kafka_share_eos.proving_ground.verify.known_targets import SAFE_TARGETS, TARGETS
from kafka_share_eos.proving_ground.verify.outages import OUTAGES, check_faults, spark_workers_for
from kafka_share_eos.proving_ground.verify.points import CONNECT_POINTS, points_of
from kafka_share_eos.proving_ground.verify.run_store import StorageKind, check_storage
from kafka_share_eos.proving_ground.verify.spec import Mix, RunSpec


@dataclass(frozen=True)
class MatrixOptions:
    """What to verify and how hard: the options of ``kafka-share-eos verify`` as the verifier
    takes them (the command adds only how to print the result)."""

    targets: Sequence[str] = SAFE_TARGETS
    points: Sequence[str] | None = None
    """Crash points to try; None means every point of each target, ``()`` none."""
    faults: Sequence[str] = ()
    """Faults (:data:`~kafka_share_eos.proving_ground.verify.outages.OUTAGES`) run as cells of every
    target, beside its crash points."""
    only: Sequence[tuple[str, str]] | None = None
    """Explicit ``(target, point)`` cells, instead of ``targets`` x ``points``."""
    runs: int = defaults.RUNS
    records: int = defaults.RECORDS
    crashes: int = defaults.CRASHES
    per_trigger: int = defaults.PER_TRIGGER
    partitions: int = defaults.PARTITIONS
    seed: int = defaults.SEED
    parallel: int = defaults.PARALLEL
    mix: Mix = field(default_factory=Mix)
    postgres_url: str | None = None
    workdir: Path | None = None
    keep: bool = False
    results: Path | None = None
    """JSON-lines file of finished runs: runs recorded there are not run again."""
    broker: BrokerKind = defaults.BROKER
    """The embedded broker, or Apache Kafka (one node, fetched once with Maven)."""
    storage: StorageKind = defaults.STORAGE
    """Where the pipelines keep their journals: their directories, or an object store started
    for the matrix (``s3``: SeaweedFS; ``abfs``: Azurite)."""
    spark_connect: bool = False
    """Run each cell's pipeline as a client of a Spark Connect server of the run's own, crashed
    at the Connect kinds (:data:`~kafka_share_eos.proving_ground.verify.points.CONNECT_POINTS`)
    instead of the classic crash points."""

    def check(self) -> None:
        """Refuse options that cannot run: every check of the verifier's options but the
        ranges the command line enforces.

        Raises:
            ConfigurationError: an unknown broker or storage, session drops asked of Apache Kafka, a
                Kafka-topic target asked of the embedded broker, an unknown fault, a Kafka
                fault asked of the embedded broker, a store fault without ``--storage s3``, a
                fault that fits none of the strategies,
                a strategy whose tables cannot live on the storage, neither crash points nor
                faults, or a strategy or
                crash point :meth:`cells` refuses.
        """
        if self.broker not in BROKER_KINDS:
            raise ConfigurationError(
                f"unknown broker {self.broker!r}; choose from {', '.join(BROKER_KINDS)}"
            )
        check_storage(self.storage)
        check_faults(self.faults, self.broker)
        stores = [fault for fault in self.faults if OUTAGES[fault].owns_store]
        if stores and self.storage != "s3":
            raise ConfigurationError(
                f"{', '.join(stores)} strike the object store every durable path of the run is "
                f"on: they need --storage s3, not {self.storage}"
            )
        if self.points == () and not self.faults:
            raise ConfigurationError("no crash point and no fault to verify: name --faults")
        named = self._named_targets()
        unfit = [fault for fault in self.faults
                 if not any(OUTAGES[fault].fits(TARGETS[t]) for t in named if t in TARGETS)]
        if unfit:
            raise ConfigurationError(
                f"{', '.join(unfit)} strike(s) nothing in runs of {', '.join(named)}: "
                "postgres-kill needs a strategy with PostgreSQL, delta-maintenance one with "
                "Delta tables"
            )
        if spark_workers_for(self.faults) and any(TARGETS[t].delta_spark for t in named
                                                  if t in TARGETS):
            raise ConfigurationError(
                f"{', '.join(self.faults)} run pipelines on a Spark standalone cluster, "
                "which has no delta-spark: leave out the strategies that use it"
            )
        elsewhere = [t for t in dict.fromkeys(named)
                     if t in TARGETS and self.storage not in TARGETS[t].storages]
        if elsewhere:
            raise ConfigurationError(
                f"{', '.join(elsewhere)} keep their tables on "
                f"{' or '.join(TARGETS[elsewhere[0]].storages)}, not on --storage {self.storage}"
            )
        needing = [t for t in dict.fromkeys(named)
                   if t in TARGETS and TARGETS[t].needs_transactions]
        if self.broker != "kafka" and needing:
            raise ConfigurationError(
                f"{', '.join(needing)} need Apache Kafka (--broker kafka): the embedded broker "
                "(librdkafka's mock) shows read_committed readers the records of aborted "
                "transactions and fences no older producer, so a pipeline killed inside a "
                "transaction would count as a duplicate there"
            )
        if self.broker == "kafka" and self.mix.session_drops:
            raise ConfigurationError(
                "session drops need the embedded broker: they rely on its dropping every share "
                "session when any client disconnects, which Apache Kafka does not do"
            )
        self._check_connect(named)
        # Strategies and crash points are refused where they are expanded into cells, after the
        # checks above, which pass over strategies no target knows.
        self.cells()

    def _check_connect(self, named: Sequence[str]) -> None:
        """Refuse what a Spark Connect run does not do: its server is the whole Spark of one
        application, on the runs' directories."""
        connect = self.spark_connect or any(point in CONNECT_POINTS
                                            for _, point in self.only or ())
        if not connect:
            return
        refused = [what for what, asked in (
            ("faults", bool(self.faults)),
            ("several applications (--pipelines)", self.mix.pipelines > 1),
            ("handoffs", self.mix.handoffs),
            ("an object store (--storage)", self.storage != defaults.STORAGE),
            ("delta-spark strategies", any(TARGETS[t].delta_spark for t in named
                                           if t in TARGETS)),
        ) if asked]
        if refused:
            raise ConfigurationError(
                "a Spark Connect run (--spark-connect) is one application on the runs' "
                f"directories, without {', '.join(refused)}"
            )
        classic = [cell for cell in self.only or () if cell[1] not in CONNECT_POINTS]
        if classic:
            raise ConfigurationError(
                f"in a Spark Connect session the crash kinds are {', '.join(CONNECT_POINTS)}, "
                f"not {classic}"
            )

    def _named_targets(self) -> Sequence[str]:
        return [t for t, _ in self.only] if self.only is not None else self.targets

    def cells(self) -> list[tuple[str, str]]:
        """``(target, point)`` pairs to run.

        Raises:
            ConfigurationError: a strategy or crash point no target knows.
        """
        unknown = [t for t in self._named_targets() if t not in TARGETS]
        if unknown:
            raise ConfigurationError(f"unknown strategy {unknown}; choose from {list(TARGETS)}")
        if self.only is not None:
            wrong = [
                cell for cell in self.only
                if cell[1] not in points_of(cell[0], self.mix.consumers)
                and cell[1] not in CONNECT_POINTS
            ]
            if wrong:
                raise ConfigurationError(f"crash point not of that strategy: {wrong}")
            return list(dict.fromkeys(self.only))
        cells = [
            (target, point)
            for target in self.targets
            for point in points_of(target, self.mix.consumers, self.spark_connect)
            if self.points is None or point in self.points
        ]
        unused = [p for p in self.points or () if not any(p == point for _, point in cells)]
        if unused:
            raise ConfigurationError(
                f"crash point(s) {unused} belong to none of the strategies {list(self.targets)}"
            )
        return cells + [(target, fault) for target in self.targets for fault in self.faults
                        if OUTAGES[fault].fits(TARGETS[target])]

    def specs(self) -> list[RunSpec]:
        """Every run, cell after cell (a fault run crashes nothing, and runs as many consumers
        as its outage asks for)."""
        return [
            RunSpec(target, point, index, self.seed, self.records,
                    0 if point in OUTAGES else self.crashes, self.per_trigger, self.partitions,
                    self._mix_of(point))
            for target, point in self.cells()
            for index in range(self.runs)
        ]

    def _mix_of(self, point: str) -> Mix:
        consumers = OUTAGES[point].consumers if point in OUTAGES else None
        return self.mix if consumers is None else replace(self.mix, consumers=consumers)
