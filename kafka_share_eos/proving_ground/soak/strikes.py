"""The soak's faults, of every family, each struck on the running soak and healed later.

The Kafka node and PostgreSQL kills are the verifier's own outages
(:class:`~kafka_share_eos.proving_ground.verify.outages.broker_kills.BrokerKill`,
:class:`~kafka_share_eos.proving_ground.verify.outages.databases.PostgresKill`). The store
fails three ways: its server SIGKILLed and started again on its data directory, and through
the fronts the pipelines reach it by, Toxiproxy's proxy (a blackhole: every byte held) and
mitmproxy's :class:`HttpFaults` (``503 SlowDown`` to a share of the requests). Delta
maintenance compacts and vacuums the pipeline's Delta tables, the ledger among them, as a
table's upkeep job would while the pipeline writes them.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.outages.broker_kills import BrokerKill
from kafka_share_eos.proving_ground.verify.outages.databases import PostgresKill
from kafka_share_eos.proving_ground.verify.outages.registry import Scene

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
    from kafka_share_eos.proving_ground.launchers.kafka_cluster import KafkaCluster
    from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
    from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
    from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy

SLOW_DOWN_SHARE = 0.5
"""The share of the store's requests answered ``503 SlowDown`` while that fault lasts."""


@dataclass
class SoakScene:
    """What the soak's faults act on."""

    kafka: KafkaCluster
    postgres: PostgresServer
    s3: S3Server
    store_proxy: Proxy
    """Toxiproxy's proxy between the pipelines and the S3 server."""
    http_faults: HttpFaults
    """mitmproxy's front before the proxy, where the pipelines send their requests."""
    topic: str
    run_dir: Path
    kill_pipeline: Callable[[], str]
    delta_tables: list[str] = field(default_factory=list)
    storage_options: Mapping[str, str] = field(default_factory=dict)

    def verify_scene(self) -> Scene:
        """The scene the verifier's outages take."""
        return Scene(self.kafka, self.topic, self.topic, self.run_dir, postgres=self.postgres,
                     delta_tables=list(self.delta_tables))


class Strike(ABC):
    """One fault of the soak; a new instance serves each time it strikes."""

    name: ClassVar[str]
    lasts: ClassVar[bool] = True
    """Whether it stays in force until it is healed (the soak's fault length); False: over
    once struck."""

    @abstractmethod
    def strike(self, scene: SoakScene) -> str:
        """Inject the fault; return what was done."""

    def heal(self, scene: SoakScene) -> str:
        """Bring back what :meth:`strike` took away; return what was done ("" for nothing)."""
        return ""


class PipelineKill(Strike):
    name = "pipeline-kill"
    lasts = False

    def strike(self, scene: SoakScene) -> str:
        return scene.kill_pipeline()


class KafkaNodeKill(Strike):
    name = "broker-kill"

    def __init__(self) -> None:
        self._outage = BrokerKill()

    def strike(self, scene: SoakScene) -> str:
        return self._outage.strike(scene.verify_scene())

    def heal(self, scene: SoakScene) -> str:
        self._outage.heal(scene.verify_scene())
        return "node started again on its storage"


class PostgresRestart(Strike):
    name = "postgres-kill"
    lasts = False

    def __init__(self) -> None:
        self._outage = PostgresKill()

    def strike(self, scene: SoakScene) -> str:
        return self._outage.strike(scene.verify_scene())


class StoreKill(Strike):
    name = "store-kill"

    def strike(self, scene: SoakScene) -> str:
        scene.s3.kill()
        return f"SIGKILL of the S3 server at {scene.s3.endpoint} and every process of it"

    def heal(self, scene: SoakScene) -> str:
        started = time.monotonic()
        scene.s3.restart()
        return f"started again on its data directory and port, up after " \
               f"{time.monotonic() - started:.1f} s"


class StoreBlackhole(Strike):
    name = "store-blackhole"

    def strike(self, scene: SoakScene) -> str:
        scene.store_proxy.cut("blackhole")
        return "every byte to and from the S3 server held (Toxiproxy blackhole)"

    def heal(self, scene: SoakScene) -> str:
        scene.store_proxy.heal()
        return "the S3 server reachable again"


class StoreSlowDown(Strike):
    name = "store-503"

    def strike(self, scene: SoakScene) -> str:
        scene.http_faults.fail(503, requests="all", share=SLOW_DOWN_SHARE)
        return f"{SLOW_DOWN_SHARE:.0%} of the S3 server's requests answered 503 SlowDown"

    def heal(self, scene: SoakScene) -> str:
        answered = scene.http_faults.answered
        scene.http_faults.heal()
        return f"{answered} requests had been answered 503"


class DeltaMaintenance(Strike):
    name = "delta-maintenance"
    lasts = False

    def strike(self, scene: SoakScene) -> str:
        from kafka_share_eos._libs import deltalake

        done = []
        for uri in scene.delta_tables:
            table = deltalake.DeltaTable(uri, storage_options=dict(scene.storage_options))
            metrics = table.optimize.compact()
            vacuumed = table.vacuum(retention_hours=0, enforce_retention_duration=False,
                                    dry_run=False)
            done.append(f"{uri.rstrip('/').rsplit('/', 1)[-1]}: "
                        f"{metrics['numFilesRemoved']} files compacted into "
                        f"{metrics['numFilesAdded']}, {len(vacuumed)} vacuumed")
        return "OPTIMIZE and VACUUM (retention 0) of " + "; ".join(done)


STRIKES: dict[str, type[Strike]] = {
    strike.name: strike
    for strike in (PipelineKill, KafkaNodeKill, PostgresRestart, StoreKill, StoreBlackhole,
                   StoreSlowDown, DeltaMaintenance)
}
"""Every fault of the soak by name: one per family."""


def check_strikes(names: list[str]) -> None:
    """Refuse a fault name the soak does not know.

    Raises:
        ConfigurationError: naming the unknown faults and every known one.
    """
    unknown = [name for name in names if name not in STRIKES]
    if unknown:
        raise ConfigurationError(
            f"unknown soak fault {', '.join(unknown)}; known: {', '.join(STRIKES)}")
