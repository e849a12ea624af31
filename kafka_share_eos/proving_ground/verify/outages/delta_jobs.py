"""Delta maintenance while the pipeline writes: from mid-batch until the run is over, OPTIMIZE,
VACUUM with no retention (``enforce_retention_duration=False``) and another writer's appends loop
in threads on each of the run's Delta tables (its target's table, and its identity ledger when it
has one), as a platform's maintenance jobs and another team would
(:class:`~kafka_share_eos.proving_ground.verify.outages.delta_upkeep.Maintenance`).

The other writer appends copies of a row of the table on partition :data:`FOREIGN_PARTITION`,
which no topic has: they are not the run's records, and the count leaves them out. The pipeline
must carry on through the maintenance with its one start.
"""

from __future__ import annotations

import math
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos._libs import deltalake
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.outages.registry import Outage, Scene, register
from kafka_share_eos.proving_ground.verify.score import FOREIGN_PARTITION

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.verify.outages.delta_upkeep import Maintenance
    from kafka_share_eos.proving_ground.verify.targets import Target


@register
class DeltaMaintenance(Outage):
    name = "delta-maintenance"
    description = ("from mid-batch until the run is over, loop OPTIMIZE, VACUUM with no "
                   "retention and another writer's appends on the run's Delta tables "
                   f"(target, ledger); the other writer's rows, on partition {FOREIGN_PARTITION}, "
                   "are not counted")
    brokers = 1
    needs_kafka = False
    heal_after_seconds = math.inf

    def __init__(self) -> None:
        self._jobs: list[Maintenance] = []

    @classmethod
    def fits(cls, target: type[Target]) -> bool:
        return bool(target.delta_tables)

    def strike(self, scene: Scene) -> str:
        from kafka_share_eos.proving_ground.verify.outages.delta_upkeep import Maintenance

        remote = [uri for uri in scene.delta_tables if "://" in uri]
        if remote or not scene.delta_tables:
            raise ConfigurationError(
                f"delta-maintenance needs the run's Delta tables in its directory, not {remote}"
            )

        def batches() -> int:
            return sum(1 for line in scene.progress() if line.get("written"))

        for uri in scene.delta_tables:
            # Read before the loops start: a later read may find the files vacuumed under it.
            job = Maintenance(uri, partial(_foreign_rows, _one_row(uri)), batches)
            self._jobs.append(job.__enter__())
        return ("OPTIMIZE, VACUUM (retention 0) and another writer's appends looping on "
                + ", ".join(Path(uri).name for uri in scene.delta_tables))

    def heal(self, scene: Scene) -> None:
        """Once the run is over: stop the loops, say what they did, raise what failed in one."""
        errors: list[BaseException] = []
        for job in self._jobs:
            try:
                job.finish()
            except Exception as error:  # every loop stops before the first error is raised
                errors.append(error)
        self.healed = "; ".join(_summary(job) for job in self._jobs)
        if errors:
            raise errors[0]


def _summary(job: Maintenance) -> str:
    return (f"{Path(job.uri).name}: {job.compactions} compactions, {job.vacuums} vacuums "
            f"({job.vacuumed_files} files deleted), {len(job.foreign_rows)} foreign appends, "
            f"{job.lost_races} maintenance commits lost a race")


def _one_row(uri: str) -> pa.Table:
    """A row of the table (the held batch's predecessor wrote some)."""
    return pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri))
                    .execute("SELECT * FROM t LIMIT 1"))


def _foreign_rows(row: pa.Table, n: int) -> pa.Table:
    """The other writer's ``n``-th append: ``row`` on partition :data:`FOREIGN_PARTITION` at
    offset ``n``, under a topic of its own."""
    changes: dict[str, Any] = {"partition": FOREIGN_PARTITION, "offset": n, "topic": "foreign"}
    for name, value in changes.items():
        if name in row.column_names:
            column = row.column_names.index(name)
            row = row.set_column(column, name,
                                 pa.array([value] * row.num_rows, row.schema.field(name).type))
    return row
