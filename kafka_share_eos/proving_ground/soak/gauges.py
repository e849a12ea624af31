"""What the soak measures while it runs: the pipeline's resident memory, its journal's files
on the store and its ledger's rows."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafka_share_eos.proving_ground.bench.memory import MIB, resident_bytes
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


def memory(pid: int) -> Memory:
    """The resident memory of the pipeline whose driver is process ``pid`` (0 once gone)."""
    jvms = [process.pid for process in live_processes(parent=pid)
            if "java" in (process.info["name"] or "")]
    driver = resident_bytes(pid) + sum(resident_bytes(jvm) for jvm in jvms)
    runners = sum(resident_bytes(runner) for jvm in jvms for runner in source_runners(jvm))
    return Memory(driver / MIB, runners / MIB)


def store_files(store: Any, prefix: str) -> int:
    """How many objects ``store`` (an obstore store) holds under ``prefix``."""
    import obstore

    return sum(len(chunk) for chunk in obstore.list(store, prefix.rstrip("/") + "/"))


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
