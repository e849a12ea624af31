"""The soak's producer: a backlog first, then a steady rate until it is stopped.

One idempotent producer for the whole soak, its records each the verifier's
:class:`~kafka_share_eos.proving_ground.verify.records.PlannedRecord` with a unique id (every
``poison_every``-th a poison record, which the pipeline dead-letters). Where each record
landed is taken from its delivery report, so the count at the end knows every record the topic
holds; one whose delivery failed is counted apart (it may or may not be in the topic).
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

from kafka_share_eos.proving_ground.verify.records import ACCOUNTS, Kind, PlannedRecord
from kafka_share_eos.proving_ground.verify.targets import Coordinates

TICK_S = 0.25
FLUSH_TIMEOUT_S = 120.0


def planned(index: int, rng: random.Random, poison_every: int) -> PlannedRecord:
    """Record ``index`` of the soak: a poison record every ``poison_every`` records (0: none)."""
    poison = poison_every > 0 and index % poison_every == poison_every - 1
    return PlannedRecord(index, rng.randrange(ACCOUNTS), rng.randrange(1, 1000),
                         Kind.POISON if poison else Kind.NORMAL)


class SteadyProducer:
    """Produces ``backlog`` records at once, then ``rate`` records a second round-robin over
    ``partitions``, in a thread, until :meth:`stop`."""

    def __init__(self, bootstrap_servers: str, topic: str, partitions: int, *, rate: float,
                 backlog: int, poison_every: int, seed: int) -> None:
        from confluent_kafka import Producer

        self.topic, self.partitions, self.rate, self.backlog = topic, partitions, rate, backlog
        self.poison_every = poison_every
        self.placed: dict[Coordinates, PlannedRecord] = {}
        self.failed: list[str] = []
        self.sent = 0
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._producer = Producer({
            "bootstrap.servers": bootstrap_servers, "enable.idempotence": True,
            # Critical only: a killed node's refused connections are the soak's own doing,
            # and a failed delivery reaches the delivery report anyway.
            "linger.ms": 5, "log_level": 2,
        })
        self._thread = threading.Thread(target=self._run, name="soak-producer", daemon=True)

    def start(self) -> SteadyProducer:
        """Produce the backlog, then go on at the rate in the background."""
        self._send(self.backlog)
        self._producer.flush(FLUSH_TIMEOUT_S)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop producing and wait for every record sent to be delivered or failed."""
        self._stop.set()
        self._thread.join()
        remaining = self._producer.flush(FLUSH_TIMEOUT_S)
        if remaining:
            self.failed.append(f"{remaining} records undelivered {FLUSH_TIMEOUT_S:.0f} s after "
                               "the producer stopped")

    def produced(self) -> dict[Coordinates, PlannedRecord]:
        """Every record delivered so far, by where it landed."""
        with self._lock:
            return dict(self.placed)

    def _run(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(TICK_S):
            due = int((time.monotonic() - started) * self.rate) + self.backlog
            self._send(due - self.sent)
            self._producer.poll(0)

    def _send(self, count: int) -> None:
        for _ in range(max(0, count)):
            record = planned(self.sent, self._rng, self.poison_every)
            self._producer.produce(self.topic, key=record.key, value=record.value,
                                   partition=self.sent % self.partitions,
                                   on_delivery=self._reporter(record))
            self.sent += 1
            # A full local queue waits for deliveries rather than failing the send.
            self._producer.poll(0)

    def _reporter(self, record: PlannedRecord) -> Any:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self.failed.append(f"record id={record.id}: {err}")
                return
            with self._lock:
                self.placed[(msg.partition(), msg.offset())] = record

        return report
