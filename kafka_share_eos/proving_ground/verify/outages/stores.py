"""The object store failing under a running pipeline: its server SIGKILLed, a share of its
requests answered ``503 SlowDown`` or ``500``, seconds of latency on every request, its endpoint
unreachable.

Each run of these faults gets an S3 server of its own (SeaweedFS, ``--storage s3``), holding
every durable path of the run: the journals and their leases, the Spark checkpoints (s3a), the
dedup ledger, the two-phase decision logs and staged files, Delta and Iceberg targets, the dead
letters. The pipelines reach it through the fault's front, if it has one: Toxiproxy for the TCP
faults, mitmproxy (:class:`~kafka_share_eos.proving_ground.launchers.http_faults.HttpFaults`)
for the HTTP ones; ``AWS_ENDPOINT_URL`` in their environment names the front, and obstore,
delta-rs, pyarrow and s3a all read it. The verifier's own reads (the sinks, the dead letters,
the journals) go to the server itself, so counting never meets the fault.

The fault strikes while pipeline ``a`` holds its second batch at its strategy's hold point, and
lasts on after the batch is released. The query either rides it out through its store clients'
own retries, or stops with an error naming the store and the path, and the verifier starts it
again on its checkpoint (the faults allow restarts, as ``postgres-kill`` does). Either way every
record must land exactly once.
"""

from __future__ import annotations

import contextlib
import time
from abc import abstractmethod
from collections.abc import Callable
from typing import ClassVar, Literal, TypeVar

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.toxiproxy import Proxy
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register
from kafka_share_eos.proving_ground.verify.outages.store_fronts import (
    Front,
    FrontedStore,
    Phases,
    fronted_store,
)
from kafka_share_eos.proving_ground.verify.run_store import RunStore

FrontT = TypeVar("FrontT", Proxy, HttpFaults)

STORE_DOWN_S = 10.0
"""How long the killed store stays down before it starts again."""
ERROR_PHASES: tuple[tuple[int, Literal["writes", "reads", "all"]], ...] = (
    (503, "writes"), (500, "reads"), (503, "all"))
"""What ``store-errors`` answers, one phase after the other: ``SlowDown`` to writes,
``InternalError`` to reads, ``SlowDown`` to every request."""
ERROR_PHASE_S = 10.0
ERROR_SHARE = 0.5
"""The share of the chosen requests answered with the error (spread evenly)."""
LATENCY_MS = 2_000
LATENCY_S = 30.0
REFUSE_S = 30.0
BLACKHOLE_S = 30.0


class StoreOutage(Outage):
    """A fault of the run's own S3 server, on either broker."""

    front: ClassVar[Front] = "none"
    brokers = 1
    needs_kafka = False
    owns_store = True
    restarts = True

    @classmethod
    def store_of_run(cls) -> contextlib.AbstractContextManager[RunStore]:
        return fronted_store(cls.front)

    @staticmethod
    def store(scene: Scene) -> FrontedStore:
        """The run's own store."""
        if not isinstance(scene.store, FrontedStore):
            raise ObjectStoreServerError("a store fault needs the run's own S3 server")
        return scene.store


@register
class StoreKill(StoreOutage):
    name = "store-kill"
    description = (f"SIGKILL the run's S3 server and every process of it mid-batch; "
                   f"{STORE_DOWN_S:.0f} s later start it again on its data directory and port")
    heal_after_seconds = STORE_DOWN_S

    def strike(self, scene: Scene) -> str:
        server = self.store(scene).s3
        server.kill()
        return (f"SIGKILL of the S3 server at {server.endpoint} and every process of it, "
                f"down for {STORE_DOWN_S:.0f} s")

    def heal(self, scene: Scene) -> None:
        started = time.monotonic()
        self.store(scene).s3.restart()
        self.healed = (f"started again on its data directory and port, up after "
                       f"{time.monotonic() - started:.1f} s")


class PhasedOutage(StoreOutage):
    """A store fault made of steps one after the other (:meth:`steps`), lifted at the heal."""

    done: ClassVar[str]
    """What the steps do, for the run's ``did``."""

    def __init__(self) -> None:
        self._phases: Phases | None = None

    @abstractmethod
    def steps(self, store: FrontedStore) -> list[tuple[float, Callable[[], None]]]:
        """Each step with how long it lasts before the next one (the first runs at the strike)."""

    @abstractmethod
    def lift(self, store: FrontedStore) -> None:
        """Undo every step: the front lets everything through again."""

    def strike(self, scene: Scene) -> str:
        self._phases = Phases(self.steps(self.store(scene)))
        self._phases.start()
        return self.done

    def heal(self, scene: Scene) -> None:
        if self._phases is not None:
            self._phases.stop()
        self.lift(self.store(scene))


@register
class StoreErrors(PhasedOutage):
    name = "store-errors"
    description = (f"answer {ERROR_SHARE:.0%} of the run's S3 requests with an error, "
                   f"{ERROR_PHASE_S:.0f} s each: 503 SlowDown to writes, 500 InternalError to "
                   "reads, 503 SlowDown to every request; then forward them all again")
    done = (f"{ERROR_SHARE:.0%} of the S3 requests answered with an error, "
            f"{ERROR_PHASE_S:.0f} s each: 503 to writes, 500 to reads, 503 to all")
    front = "http"
    heal_after_seconds = ERROR_PHASE_S * len(ERROR_PHASES)

    def __init__(self) -> None:
        super().__init__()
        self._answered: list[int] = []

    def steps(self, store: FrontedStore) -> list[tuple[float, Callable[[], None]]]:
        faults = _front(store.http_faults)

        def phase(index: int) -> Callable[[], None]:
            def begin() -> None:
                if index:  # each fail() counts anew: what the phase before answered is kept
                    self._answered.append(faults.answered)
                status, requests = ERROR_PHASES[index]
                faults.fail(status, requests=requests, share=ERROR_SHARE)
            return begin

        return [(ERROR_PHASE_S, phase(i)) for i in range(len(ERROR_PHASES))]

    def lift(self, store: FrontedStore) -> None:
        faults = _front(store.http_faults)
        self._answered.append(faults.answered)
        faults.heal()
        self.healed = f"errors answered per phase: {self._answered}"


@register
class StoreLatency(PhasedOutage):
    name = "store-latency"
    description = (f"delay every answer of the run's S3 server by {LATENCY_MS / 1000:.0f} s "
                   f"for {LATENCY_S:.0f} s (Toxiproxy latency)")
    done = f"{LATENCY_MS} ms of latency on every answer of the S3 server for {LATENCY_S:.0f} s"
    front = "tcp"
    heal_after_seconds = LATENCY_S

    def steps(self, store: FrontedStore) -> list[tuple[float, Callable[[], None]]]:
        proxy = _front(store.proxy)

        def slow() -> None:
            proxy.add_toxic("latency", latency=LATENCY_MS)

        return [(LATENCY_S, slow)]

    def lift(self, store: FrontedStore) -> None:
        _front(store.proxy).heal()


@register
class StoreUnreachable(PhasedOutage):
    name = "store-unreachable"
    description = (f"refuse every connection to the run's S3 server for {REFUSE_S:.0f} s, then "
                   f"blackhole them for {BLACKHOLE_S:.0f} s (Toxiproxy), then let them through")
    done = (f"connections to the S3 server refused for {REFUSE_S:.0f} s, then blackholed for "
            f"{BLACKHOLE_S:.0f} s")
    front = "tcp"
    heal_after_seconds = REFUSE_S + BLACKHOLE_S

    def steps(self, store: FrontedStore) -> list[tuple[float, Callable[[], None]]]:
        proxy = _front(store.proxy)

        def blackhole() -> None:
            # Listening again, so that connections are accepted and then held.
            proxy.enable()
            proxy.cut("blackhole")

        return [(REFUSE_S, lambda: proxy.cut("refuse")), (BLACKHOLE_S, blackhole)]

    def lift(self, store: FrontedStore) -> None:
        _front(store.proxy).heal()


def _front(front: FrontT | None) -> FrontT:
    if front is None:
        raise ObjectStoreServerError("the run's store has no front for this fault")
    return front
