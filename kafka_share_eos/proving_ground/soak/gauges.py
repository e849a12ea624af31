"""What the soak measures while it runs: the pipeline's resident memory, its journal's files
on the store and its ledger's rows."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_share_eos.journal.metrics_store import METRICS_DIR, SLOT_METRICS_DIR
from kafka_share_eos.proving_ground.bench.memory import MIB, resident_bytes
from kafka_share_eos.proving_ground.launchers.jvm import heap_live_mib
from kafka_share_eos.proving_ground.launchers.processes import live_processes
from kafka_share_eos.proving_ground.launchers.spark import source_runners


@dataclass(frozen=True)
class Memory:
    """Resident MiB of a pipeline: its driver (the Python process and the Spark JVM it
    started) and its ``kafka-share`` source runners together."""

    driver: float
    runners: float

    def as_dict(self) -> dict[str, float]:
        """Rounded to a tenth of a MiB, for the saved result."""
        return {"driver": round(self.driver, 1), "runners": round(self.runners, 1)}


def _jvms(pid: int) -> list[int]:
    return [process.pid for process in live_processes(parent=pid)
            if "java" in (process.info["name"] or "")]


def memory(pid: int) -> Memory:
    """The resident memory of the pipeline whose driver is process ``pid`` (0 once gone)."""
    jvms = _jvms(pid)
    driver = resident_bytes(pid) + sum(resident_bytes(jvm) for jvm in jvms)
    runners = sum(resident_bytes(runner) for jvm in jvms for runner in source_runners(jvm))
    return Memory(driver / MIB, runners / MIB)


def heap_live(pid: int) -> float | None:
    """MiB of live objects on the heap of the Spark JVM of the pipeline whose driver is
    process ``pid``: with its heap fixed and touched at the start, what resident memory cannot
    show."""
    return next((live for jvm in _jvms(pid) if (live := heap_live_mib(jvm)) is not None), None)


def journal_files(store: Any, prefix: str) -> tuple[int, int]:
    """Objects of the journal under ``prefix`` of ``store`` (an obstore store): those its purge
    bounds (segments, leases, rejections, slot reports), and its batch metrics entries, of which
    it keeps the newest :data:`~kafka_share_eos.journal.metrics_store.DEFAULT_KEPT`."""
    import obstore

    root = prefix.rstrip("/") + "/"
    entries = f"{root}{METRICS_DIR}/"
    purged = metrics = 0
    for chunk in obstore.list(store, root):
        for meta in chunk:
            path = str(meta["path"])
            if path.startswith(entries) and not path.startswith(f"{root}{SLOT_METRICS_DIR}/"):
                metrics += 1
            else:
                purged += 1
    return purged, metrics


def delta_rows(uri: str, storage_options: Mapping[str, str]) -> int:
    """Rows of the Delta table at ``uri`` now (0 before it exists), from its files' statistics."""
    from kafka_share_eos._libs import deltalake

    options = dict(storage_options)
    if not deltalake.DeltaTable.is_deltatable(uri, options):
        return 0
    import pyarrow as pa

    actions = pa.table(deltalake.DeltaTable(uri, storage_options=options)
                       .get_add_actions(flatten=True))
    return int(sum(actions["num_records"].to_pylist())) if actions.num_rows else 0


class ProgressTail:
    """Reads the pipeline's progress lines as they are appended: batches finished, records
    applied."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.batches = 0
        self.applied = 0
        self._offset = 0

    def read(self) -> None:
        """Take in the lines appended since the last read (a line a kill cut short is
        skipped)."""
        if not self.path.exists():
            return
        with self.path.open("rb") as progress:
            progress.seek(self._offset)
            chunk = progress.read()
        end = chunk.rfind(b"\n") + 1
        self._offset += end
        for line in chunk[:end].splitlines():
            try:
                parsed = json.loads(line)
            except ValueError:
                continue
            if isinstance(parsed, dict) and "written" in parsed:
                self.batches += 1
                self.applied += int(parsed["written"])


@dataclass
class Life:
    """One start of the pipeline: when (seconds into the soak), the batches finished before
    it, and its resident memory after its own warm-up and at its last sample."""

    started: float
    batches_before: int
    warm_up: Memory | None = None
    last: Memory | None = None
    heap_live: list[float] = field(default_factory=list)
    """MiB of live heap at each measure of the levels after its warm-up."""

    def as_dict(self) -> dict[str, object]:
        """For the saved result."""
        return {"started_s": round(self.started, 1),
                "rss_warm_up_mib": None if self.warm_up is None else self.warm_up.as_dict(),
                "rss_last_mib": None if self.last is None else self.last.as_dict(),
                "heap_live_mib": [round(live, 1) for live in self.heap_live]}
