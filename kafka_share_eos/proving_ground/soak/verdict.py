"""The soak's result: what it counted and measured, the checks it must pass, its JSON file."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka_share_eos.journal.metrics_store import DEFAULT_KEPT

METRICS_KEPT = DEFAULT_KEPT
MEMORY_GROWTH = 1.1
"""Resident memory at the end may be at most this many times that after the warm-up."""
STORE_GROWTH = 1.2
"""Journal files and ledger rows at the end may be at most this many times their level after
the warm-up: what the journal's purge and the ledger's retention promise."""


@dataclass
class SoakResult:
    """One soak, as saved (``docs/results/soak.json`` for the committed run)."""

    minutes: float
    """Minutes the producer ran, warm-up included."""
    records: int = 0
    """Records produced (and found in the topic by their delivery reports)."""
    faults: dict[str, int] = field(default_factory=dict)
    """Faults struck, per kind."""
    duplicates: int = 0
    lost: int = 0
    dead_lettered: int = 0
    rss_start_mib: dict[str, float] = field(default_factory=dict)
    """Resident MiB of the driver and the source runners after the warm-up."""
    rss_end_mib: dict[str, float] = field(default_factory=dict)
    """The same once the time was up, before the drain."""
    journal_files: dict[str, int] = field(default_factory=dict)
    """Objects of the journal its purge bounds (segments, leases, rejections, slot reports),
    ``warm_up`` and ``end``."""
    journal_metrics: dict[str, int] = field(default_factory=dict)
    """The journal's batch metrics entries, ``warm_up`` and ``end``: it keeps the newest
    :data:`METRICS_KEPT`."""
    ledger_rows: dict[str, int] = field(default_factory=dict)
    """Rows of the identity ledger, ``warm_up`` and ``end``."""
    warm_up_batches: int = 0
    lives: list[dict[str, Any]] = field(default_factory=list)
    """Each start of the pipeline: when, and its resident MiB after its own warm-up and at its
    last sample (a start killed before its warm-up has none)."""
    pipeline_starts: int = 0
    failed_starts: int = 0
    """Starts that ended with an error (a fault the query stopped on), each followed by a
    restart on the checkpoint."""
    producer_failures: int = 0
    fault_log: list[dict[str, Any]] = field(default_factory=list)
    """Each fault: when (seconds since the start), its kind, what it did and its heal."""
    samples: list[dict[str, Any]] = field(default_factory=list)
    """Over time: seconds since the start, records applied, resident MiB."""
    setup: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    checks: dict[str, str] = field(default_factory=dict)
    """Every check that failed, with why (empty: all passed)."""

    @property
    def passed(self) -> bool:
        """Whether every check passed."""
        return not self.checks

    def judge(self, kinds: list[str]) -> None:
        """Fill :attr:`checks`; ``kinds`` are the faults the soak was to strike."""
        failed: dict[str, str] = {}
        if self.error:
            failed["run"] = self.error
        if self.duplicates:
            failed["duplicates"] = f"{self.duplicates} duplicates"
        if self.lost:
            failed["lost"] = f"{self.lost} records lost"
        for process, start in self.rss_start_mib.items():
            end = self.rss_end_mib.get(process, 0.0)
            if end > MEMORY_GROWTH * start:
                failed[f"memory {process}"] = (f"{end:.1f} MiB at the end against {start:.1f} "
                                               f"after the warm-up (limit x{MEMORY_GROWTH})")
        for index, life in enumerate(self.lives):
            warm = life.get("rss_warm_up_mib") or {}
            last = life.get("rss_last_mib") or {}
            for process in warm:
                if last.get(process, 0.0) > MEMORY_GROWTH * warm[process]:
                    failed[f"memory {process}, start {index + 1}"] = (
                        f"{last[process]:.1f} MiB at its last sample against "
                        f"{warm[process]:.1f} after its warm-up (limit x{MEMORY_GROWTH})")
        for name, levels in (("journal files", self.journal_files),
                             ("ledger rows", self.ledger_rows)):
            start, end = levels.get("warm_up", 0), levels.get("end", 0)
            if end > STORE_GROWTH * start:
                failed[name] = (f"{end} at the end against {start} after the warm-up "
                                f"(limit x{STORE_GROWTH})")
        if self.journal_metrics.get("end", 0) > METRICS_KEPT:
            failed["journal metrics"] = (f"{self.journal_metrics['end']} entries at the end, "
                                         f"above the {METRICS_KEPT} kept")
        missing = [kind for kind in kinds if not self.faults.get(kind)]
        if missing:
            failed["faults"] = f"never struck: {', '.join(missing)}"
        self.checks = failed

    def save(self, path: Path) -> None:
        """Write the result as JSON."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**asdict(self), "passed": self.passed}, indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> SoakResult:
        """Read a result :meth:`save` wrote."""
        saved = json.loads(path.read_text())
        saved.pop("passed", None)
        return cls(**saved)
