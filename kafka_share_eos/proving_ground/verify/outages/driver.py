"""Strikes an outage while the run's first pipeline holds a batch, and heals it afterwards.

The pipeline is started with a hold at its strategy's hold point (``KSE_HOLD_AT`` and
``KSE_HOLD_GATE``, see :mod:`kafka_share_eos.faults`): when its batch reaches that point it
waits at the gate. The driver then strikes the outage, opens the gate, waits until a batch
after the held one applied records (or, for a restart, not at all; for a network cut, the
cut's length; for maintenance, until the run is over) and heals the outage.
Stopping the driver heals an outage still in force, so the next run finds the cluster whole.
A pipeline that failed on an outage its run allows restarts for starts again only once the
driver has it restored (:meth:`FaultDriver.wait_restored`), as an operator restarts a query once
its store or database is back.
"""

from __future__ import annotations

import math
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kafka_share_eos import faults
from kafka_share_eos.proving_ground.verify.outages.gaps import held_batch, held_partitions
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene

ProgressLines = Callable[[], Sequence[Mapping[str, Any]]]


class FaultDriver:
    """Once started, watches ``gate`` for the held ``point`` and runs ``outage`` once;
    ``progress`` reads the held pipeline's progress lines."""

    def __init__(
        self, outage: Outage, scene: Scene, gate: Path, point: str, progress: ProgressLines
    ) -> None:
        self.outage = outage
        self.scene = scene
        self._held, self._release = faults.gate_files(gate, point)
        self._progress = scene.progress = progress
        self._done = scene.over
        self._thread = threading.Thread(target=self._run, name=f"fault-{outage.name}",
                                        daemon=True)
        self.struck_at: float | None = None
        self.healed_at: float | None = None
        self._held_batch = -1
        self._restored = threading.Event()
        self.did = ""
        self.error: str | None = None

    def start(self) -> FaultDriver:
        """Watch for the held batch in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """The run is over: heal an outage still in force (none strikes any more)."""
        self._done.set()
        self._thread.join()

    def wait_restored(self) -> None:
        """Return once what the outage took away is back: healed, or at once for an outage
        whose strike brought it back itself (healed only when the run is over), or once the
        run is over."""
        while not self._restored.wait(0.2) and not self._done.is_set():
            pass

    def report(self, stall: float | None) -> dict[str, Any]:
        """What the fault did and when, with the stall it caused."""
        return {
            "fault": self.outage.name,
            "did": self.did,
            "struck_at": self.struck_at,
            "healed_after_seconds": (None if self.healed_at is None or self.struck_at is None
                                     else round(self.healed_at - self.struck_at, 2)),
            "stall_seconds": None if stall is None else round(stall, 2),
            "error": self.error,
        }

    def _run(self) -> None:
        while not self._held.exists():
            if self._done.wait(0.05):
                return
        lines = self._progress()
        self.scene.held_partitions = held_partitions(lines)
        self._held_batch = held_batch(lines)
        struck = self.struck_at = time.time()
        try:
            self.did = self.outage.strike(self.scene)
        except Exception:  # reported with the run; the gate must open all the same
            self.error = f"striking {self.outage.name}: {traceback.format_exc(limit=3)}"
        finally:
            self._release.touch()
        after = self.outage.heal_after_seconds
        if after is not None and math.isinf(after):
            self._restored.set()
        if after is None:
            while not self._recovered() and not self._done.wait(0.2):
                pass
        else:
            self._done.wait(None if math.isinf(after) else max(0.0, struck + after - time.time()))
        try:
            self.outage.heal(self.scene)
            self.healed_at = time.time()
            if self.outage.healed:
                self.did = f"{self.did}; {self.outage.healed}"
        except Exception:
            self.error = f"healing {self.outage.name}: {traceback.format_exc(limit=3)}"
        finally:
            # A failed heal too: the pipeline's next start shows what is still broken.
            self._restored.set()

    def _recovered(self) -> bool:
        """Whether a batch after the held one applied records: the held batch finishes as
        soon as it is released, the next one needs what the outage took away."""
        return self.scene.applied_after(self._held_batch)


FAULT_IDLE_MS = 20_000
"""How long a fault run's pipeline polls an empty group before its drain ends: longer than the
failover (Kafka fences a dead broker after ``broker.session.timeout.ms``, 9 s) plus a record
lock (4 s) of records a lost consumer held, or the drain would end with records still locked."""
HELD_BATCH = 2
"""The batch the outage strikes: the second, so one batch applied records before it."""


def hold_environment(point: str, gate: Path) -> dict[str, str]:
    """The environment that makes a pipeline wait at ``point`` of its held batch until the
    driver watching ``gate`` opens it."""
    gate.mkdir(parents=True, exist_ok=True)
    return {faults.HOLD_AT_ENV: faults.crash_spec(point, HELD_BATCH),
            faults.HOLD_GATE_ENV: str(gate)}
