"""PostgreSQL lost mid-batch: the run's own durable server SIGKILLed with every process of it,
as a power cut would, and started again on its data directory.

Each run of this fault gets a server of its own (``PostgresServer(durable=True)``: fsync,
synchronous commit and full-page writes on, so the crash loses no acknowledged commit). The
pipeline's held batch lost its connection: released, it fails with
:class:`~kafka_share_eos.errors.DatabaseUnavailableError` and the query stops, and the verifier
starts the pipeline again on the same checkpoint, as after a crash point. Once the run is over,
no transaction may be left prepared on the server: a two-phase commit that PREPAREd before the
crash must have been finished by the restart.
"""

from __future__ import annotations

import math
import time
from typing import TYPE_CHECKING

from kafka_share_eos._libs import sa
from kafka_share_eos.proving_ground.errors import PostgresServerError
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.postgres import PostgresServer
    from kafka_share_eos.proving_ground.verify.targets import Target


@register
class PostgresKill(Outage):
    name = "postgres-kill"
    description = ("SIGKILL the run's PostgreSQL server (durable) and every process of it, "
                   "mid-batch, and start it again on its data directory; the pipeline may fail "
                   "and start again on its checkpoint; no prepared transaction may be left")
    brokers = 1
    needs_kafka = False
    owns_postgres = True
    restarts = True
    heal_after_seconds = math.inf

    @classmethod
    def fits(cls, target: type[Target]) -> bool:
        return target.needs_postgres

    def strike(self, scene: Scene) -> str:
        server = _server(scene)
        server.kill()
        killed = time.monotonic()
        server.restart()
        return (f"SIGKILL of the PostgreSQL server on port {server.port} and every process of "
                f"it; started again on its data directory, up after "
                f"{time.monotonic() - killed:.1f} s of crash recovery")

    def heal(self, scene: Scene) -> None:
        """Once the run is over: check that the restarts left no transaction prepared."""
        engine = sa.create_engine(_server(scene).url)
        try:
            with engine.connect() as conn:
                left = [row[0] for row in conn.exec_driver_sql("SELECT gid FROM pg_prepared_xacts")]
        finally:
            engine.dispose()
        if left:
            raise PostgresServerError(f"transactions left prepared after the run: {left}")
        self.healed = "no prepared transaction left after the run"


def _server(scene: Scene) -> PostgresServer:
    if scene.postgres is None:
        raise PostgresServerError("postgres-kill needs the run's own PostgreSQL server")
    return scene.postgres
