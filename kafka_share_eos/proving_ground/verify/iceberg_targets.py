"""The verifier's targets that write Iceberg tables, and how their effects are counted.

Each run has its own catalog: pyiceberg's SQL catalog on an SQLite file in the run's directory,
with the warehouse beside it, or, with ``--storage s3``, on the run's prefix of the object store.
The pipelines build the catalog in their own process; on S3 they take the store's endpoint and
region from their environment, and pyarrow takes the keys from it, so no file of the run holds
them. The verifier's own reads are given the store's settings.

Counting reads the table itself, twice over:

- ``iceberg``: the rows of the current snapshot per record identity;
- ``iceberg writes``: the rows of every data file a snapshot of the table added, per record
  identity, so a record written again shows even where a later commit replaced its row.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa
import pyarrow.parquet as pq

from kafka_share_eos import faults
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify.records import EFFECT_SCHEMA, PlannedRecord
from kafka_share_eos.proving_ground.verify.table_targets import TwoPhase
from kafka_share_eos.proving_ground.verify.targets import (
    Coordinates,
    Landed,
    RunContext,
    Target,
    screening,
)

if TYPE_CHECKING:
    from pyiceberg.table import Table

    from kafka_share_eos.proving_ground.verify.targets import Produced

TABLE = "verify.effects"
CATALOG_FILE = "iceberg-catalog.db"
WAREHOUSE = "iceberg"


def catalog_config(ctx: RunContext) -> dict[str, str]:
    """The run's catalog: an SQL catalog on SQLite in the run's directory, its warehouse there
    or under the run's prefix on S3.

    Raises:
        ConfigurationError: the run's store is not S3 (the Iceberg targets write to local
            disk or S3).
    """
    config = {"name": "verify", "type": "sql", "uri": f"sqlite:///{ctx.run_dir / CATALOG_FILE}"}
    if ctx.store_root is None:
        return {**config, "warehouse": (ctx.run_dir / WAREHOUSE).as_uri()}
    if not ctx.store_root.startswith("s3://"):
        raise ConfigurationError(
            f"the Iceberg targets keep their warehouse on local disk or on S3, not on "
            f"{ctx.store_root.split('://')[0]}://"
        )
    return {**config, "warehouse": ctx.path(WAREHOUSE), **_s3_properties(ctx.storage_options)}


def _s3_properties(options: Mapping[str, str] | None) -> dict[str, str]:
    """pyiceberg's FileIO settings for the run's S3 store: from the verifier's storage options,
    keys included, or in a pipeline from its environment (endpoint and region; pyarrow reads
    the keys there itself)."""
    if options is not None:
        return {"s3.endpoint": options["aws_endpoint_url"], "s3.region": options["aws_region"],
                "s3.access-key-id": options["aws_access_key_id"],
                "s3.secret-access-key": options["aws_secret_access_key"]}
    missing = [name for name in ("AWS_ENDPOINT_URL", "AWS_REGION") if name not in os.environ]
    if missing:
        raise ConfigurationError(
            f"the pipeline's environment lacks {', '.join(missing)}, which point it at the "
            "run's S3 store"
        )
    return {"s3.endpoint": os.environ["AWS_ENDPOINT_URL"], "s3.region": os.environ["AWS_REGION"]}


def _open(ctx: RunContext) -> tuple[Any, Table | None]:
    """The run's catalog (to forget once read) and its table, None before it exists."""
    from kafka_share_eos.iceberg.catalogs import IcebergCatalog
    from kafka_share_eos.iceberg.tables import load_table

    catalog = IcebergCatalog(catalog_config(ctx))
    return catalog, load_table(catalog.catalog(), TABLE)


def _identities(rows: pa.Table) -> Counter[Coordinates]:
    return Counter(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(), strict=True))


def _added_files(table: Table) -> set[str]:
    """Every data file a snapshot the table holds added."""
    paths = set()
    for snapshot in table.snapshots():
        for manifest in snapshot.manifests(table.io):
            if manifest.added_snapshot_id != snapshot.snapshot_id:
                continue
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=True):
                if entry.status.name == "ADDED" and entry.data_file.content.name == "DATA":
                    paths.add(entry.data_file.file_path)
    return paths


def iceberg_landed(ctx: RunContext) -> Landed:
    """Rows per record in the run's table now, and rows written per record by its snapshots."""
    catalog, table = _open(ctx)
    try:
        if table is None:
            return {"iceberg": Counter(), "iceberg writes": Counter()}
        current = _identities(table.scan(selected_fields=("partition", "offset")).to_arrow())
        writes: Counter[Coordinates] = Counter()
        for path in _added_files(table):
            with table.io.new_input(path).open(seekable=True) as stream:
                writes += _identities(pq.read_table(stream, columns=["partition", "offset"]))
        return {"iceberg": current, "iceberg writes": writes}
    finally:
        catalog.forget()


def create_iceberg_table(ctx: RunContext) -> None:
    """Create the run's table (and its warehouse directory on local disk)."""
    from kafka_share_eos.iceberg.tables import create_table

    if ctx.store_root is None:
        (ctx.run_dir / WAREHOUSE).mkdir(parents=True, exist_ok=True)
    catalog, _ = _open(ctx)
    try:
        create_table(catalog.catalog(), TABLE, EFFECT_SCHEMA)
    finally:
        catalog.forget()


class IcebergTargetBase(Target):
    """A target writing the run's Iceberg table, created before the pipelines start."""

    storages = ("local", "s3")
    extra = "iceberg"

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        create_iceberg_table(ctx)

    def landed(self, ctx: RunContext, produced: Produced) -> Landed:
        return iceberg_landed(ctx)


class IcebergUpsert(IcebergTargetBase):
    name = "upsert-iceberg"
    description = "IdempotentUpsertSink into an Iceberg table (pyiceberg, SQL catalog)"

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.strategies import IdempotentUpsertSink

        return IdempotentUpsertSink.iceberg(
            TABLE, catalog=catalog_config(ctx), app_id=f"verify-{pipeline}", **screening(ctx)
        )


class DedupIceberg(IcebergTargetBase):
    name = "dedup-iceberg"
    description = "CheckpointDedupStore: Delta identity ledger + IcebergAppendSink"
    own_points = (faults.DEDUP_BEFORE_SINK, faults.DEDUP_AFTER_SINK)
    hold_point = faults.DEDUP_BEFORE_CLAIM
    delta_tables = ("ledger",)

    def build(self, ctx: RunContext, pipeline: str) -> Any:
        from kafka_share_eos.sinks.iceberg_append import IcebergAppendSink
        from kafka_share_eos.strategies import CheckpointDedupStore

        return CheckpointDedupStore(
            ctx.path("ledger"),
            IcebergAppendSink(TABLE, catalog=catalog_config(ctx),
                              app_id=f"verify-sink-{pipeline}"),
            app_id=f"verify-{pipeline}",
            **screening(ctx),
        )


class TwoPhaseIceberg(TwoPhase):
    name = "two-phase-iceberg"
    description = "TwoPhaseCommitCoordinator: a Postgres increment and an Iceberg append"
    delta_tables: ClassVar[tuple[str, ...]] = ()
    storages = IcebergTargetBase.storages
    extra = IcebergTargetBase.extra

    def setup(self, ctx: RunContext, records: Sequence[PlannedRecord]) -> None:
        super().setup(ctx, records)
        create_iceberg_table(ctx)

    def append(self, ctx: RunContext) -> Any:
        from kafka_share_eos.twophase.iceberg import IcebergParticipant

        return IcebergParticipant(TABLE, catalog=catalog_config(ctx), create_table=False)

    def appended(self, ctx: RunContext) -> Landed:
        return iceberg_landed(ctx)
