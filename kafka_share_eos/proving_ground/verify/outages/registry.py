"""The faults the verifier knows, by name: what each one does to a running cluster.

A fault cell of ``verify --faults`` runs one pipeline through one :class:`Outage`: when the
pipeline's batch is held mid-way (at its strategy's hold point), the outage strikes (kills a
broker, cuts the network, ...), the batch is released, and once the stream applied records again
(or the pipeline finished) the outage heals. A module that defines an outage registers it with
:func:`register`; :mod:`kafka_share_eos.proving_ground.verify.outages` imports every such module.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from kafka_share_eos.errors import ConfigurationError

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
    from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
    from kafka_share_eos.proving_ground.launchers.spark_cluster import SparkCluster
    from kafka_share_eos.proving_ground.verify.run_store import RunStore
    from kafka_share_eos.proving_ground.verify.targets import Target


@dataclass
class Scene:
    """What an outage acts on: the run's cluster, topic and share group, while a batch of the
    run's first pipeline is held."""

    kafka: KafkaCluster | None
    """The run's Apache Kafka cluster; None on the embedded broker."""
    topic: str
    group: str
    run_dir: Path
    held_partitions: list[int] = field(default_factory=list)
    """Partitions of the records the held batch holds (set just before the outage strikes)."""
    spark: SparkCluster | None = None
    """The Spark standalone cluster the pipeline runs on, for an outage with
    :attr:`Outage.spark_workers`."""
    progress: Callable[[], Sequence[Mapping[str, Any]]] = list
    """The held pipeline's progress lines so far (set by the driver)."""
    over: threading.Event = field(default_factory=threading.Event)
    """Set once the run is over: its pipeline drained the group and exited."""
    postgres: PostgresServer | None = None
    """The run's own PostgreSQL server, for an outage with :attr:`Outage.owns_postgres`."""
    delta_tables: list[str] = field(default_factory=list)
    """Where the run's Delta tables are (its target's, see :attr:`Target.delta_tables`)."""
    store: RunStore | None = None
    """The run's object store: its own, for an outage with :attr:`Outage.owns_store`."""

    @property
    def cluster(self) -> KafkaCluster:
        """The run's Apache Kafka cluster.

        Raises:
            ConfigurationError: the run is on the embedded broker.
        """
        if self.kafka is None:
            raise ConfigurationError("this fault strikes Apache Kafka, and the run has none")
        return self.kafka

    def applied_after(self, batch: int) -> bool:
        """Whether a batch after ``batch`` applied records."""
        return any(line.get("written", 0) > 0 and int(line["batch"]) > batch
                   for line in self.progress())


class Outage(ABC):
    """One fault, struck once per run and healed afterwards. A new instance serves each run,
    so it may keep what it did (the node it killed) for :meth:`heal`."""

    name: ClassVar[str]
    """The name ``--faults`` takes."""
    description: ClassVar[str]
    """What it does, in one line (the faults table of the docs and ``verify --help``)."""
    brokers: ClassVar[int] = 3
    """Kafka nodes the cluster of its runs needs."""
    heal_after_seconds: ClassVar[float | None] = None
    """Heal this long after the strike (0: right after the held batch is released, as a
    restart does; ``math.inf``: once the run is over); None: once the stream applied records
    again without what the outage took away."""
    proxied: ClassVar[bool] = False
    """Its run's pipelines reach the brokers only through the cluster's Toxiproxy proxies (see
    :class:`~kafka_share_eos.proving_ground.launchers.toxiproxy.Proxy`), which it may cut."""
    spark_workers: ClassVar[int] = 0
    """With some: its run's pipeline runs on a Spark standalone cluster of that many workers
    (see :class:`~kafka_share_eos.proving_ground.launchers.spark_cluster.SparkCluster`) instead of
    in-process Spark, with :attr:`consumers` share consumers polling in its executors."""
    consumers: ClassVar[int | None] = None
    """Share consumers per pipeline of its runs, in place of the matrix's (above 1 they poll
    in executor tasks, under ``acknowledge=afterJournal``); None keeps the matrix's."""
    kafka_version: ClassVar[str | None] = None
    """With one: each of its runs gets a Kafka cluster of its own, started on that release
    (it leaves the cluster changed for good, as an upgrade does); None: the matrix's cluster."""
    needs_kafka: ClassVar[bool] = True
    """Whether it strikes Apache Kafka (``--broker kafka``); False: the embedded broker does."""
    owns_postgres: ClassVar[bool] = False
    """Each of its runs gets a durable PostgreSQL server of its own (which it may kill) instead
    of the matrix's."""
    owns_store: ClassVar[bool] = False
    """Each of its runs gets an S3 server of its own (``--storage s3``), made by
    :meth:`store_of_run`, which it may kill or put a fault front before: the run's pipelines
    reach the store through the front, the verifier's own reads go to the server."""
    restarts: ClassVar[bool] = False
    """Its run's pipeline may fail on it and start again on the same checkpoint, as after a
    crash point; False: the one start must carry on through it."""
    healed: str = ""
    """What :meth:`heal` did, when it says more than :meth:`strike`'s answer."""

    @classmethod
    def fits(cls, target: type[Target]) -> bool:
        """Whether it has something to strike in runs of ``target`` (a fault cell is made only
        for the targets it fits)."""
        return True

    @classmethod
    def store_of_run(cls) -> AbstractContextManager[RunStore]:
        """The object store of one run of an outage with :attr:`owns_store`, started for the
        run's duration.

        Raises:
            ConfigurationError: the outage owns no store.
        """
        raise ConfigurationError(f"{cls.name} strikes no object store of its own")

    @abstractmethod
    def strike(self, scene: Scene) -> str:
        """Inject the fault; return what was done (``"SIGKILL node 2, leader of p0"``)."""

    @abstractmethod
    def heal(self, scene: Scene) -> None:
        """Bring back what :meth:`strike` took away, and wait until it is back."""


OUTAGES: dict[str, type[Outage]] = {}
"""Every registered outage by name (a fresh instance serves each run)."""


def register(outage: type[Outage]) -> type[Outage]:
    """Add ``outage`` to :data:`OUTAGES` under its name (usable as a class decorator)."""
    OUTAGES[outage.name] = outage
    return outage


def check_faults(names: Iterable[str], broker: str) -> None:
    """Refuse fault names no outage has, and Kafka's faults asked of another broker.

    Raises:
        ConfigurationError: naming the unknown faults and every known one, or the broker.
    """
    names = list(names)
    known = ", ".join(OUTAGES)
    unknown = [name for name in names if name not in OUTAGES]
    if unknown:
        raise ConfigurationError(f"unknown fault {', '.join(unknown)}; known faults: {known}")
    kafka = [name for name in names if OUTAGES[name].needs_kafka]
    if kafka and broker != "kafka":
        raise ConfigurationError(
            f"faults ({', '.join(kafka)}) need --broker kafka: they strike a three-node "
            f"Apache Kafka cluster; known faults: {known}"
        )


def brokers_for(names: Iterable[str]) -> int:
    """Kafka nodes the matrix's cluster needs for these faults (1 without faults, or when each
    of their runs starts a cluster of its own)."""
    return max((OUTAGES[name].brokers for name in names if OUTAGES[name].kafka_version is None),
               default=1)


def proxied_for(names: Iterable[str]) -> bool:
    """Whether a run of these faults needs the cluster's TCP proxies."""
    return any(OUTAGES[name].proxied for name in names)


def spark_workers_for(names: Iterable[str]) -> int:
    """Spark standalone workers a run of these faults needs (0: none, Spark runs in-process)."""
    return max((OUTAGES[name].spark_workers for name in names), default=0)
