"""``kafka-share-eos dedup``: maintenance of a checkpoint-dedup identity ledger."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.group import Commands
from kafka_share_eos.cli.options import StorageOpt, key_values, storage_options
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.retention import RetentionPolicy
from kafka_share_eos.ledger.rows import DEFAULT_APP_ID
from kafka_share_eos.ledger.stats import ledger_stats

dedup = typer.Typer(
    name="dedup",
    cls=Commands,
    help="Inspect, prune and compact a checkpoint-dedup identity ledger (a Delta table, or an "
    "Iceberg table with --iceberg-catalog).",
    no_args_is_help=True,
)

LedgerArg = Annotated[
    str, typer.Argument(metavar="LEDGER", help="Ledger table: a path or an object-store URI, "
                        "or with --iceberg-catalog an Iceberg table's identifier (db.ledger).")
]
IcebergCatalogOpt = Annotated[
    list[str],
    typer.Option("--iceberg-catalog", metavar="KEY=VALUE", help="A setting of the pyiceberg "
                 "catalog of an Iceberg LEDGER (type=sql, uri=..., warehouse=...); repeatable."),
]
AppIdOpt = Annotated[
    str, typer.Option(metavar="ID", help="Application id the ledger records batches under.")
]


def _open(uri: str, storage_option: list[str], app_id: str, iceberg_catalog: list[str]
          ) -> IdentityLedger | IcebergLedger:
    options = storage_options(storage_option)
    if iceberg_catalog:
        if options:
            raise typer.BadParameter("an Iceberg ledger's storage is set by --iceberg-catalog",
                                     param_hint="--storage-option")
        config = key_values(iceberg_catalog, "--iceberg-catalog")
        with given("LEDGER", uri):
            return IcebergLedger.existing(uri, catalog=config, app_id=app_id)
    with given("LEDGER", uri):
        return IdentityLedger.existing(uri, app_id=app_id, storage_options=options)


@dedup.command("prune")
def prune_command(
    ledger: LedgerArg,
    offset_window: Annotated[
        int | None,
        typer.Option(min=0, metavar="N", help="Keep identities within N offsets of their "
                     "partition's highest applied offset (record identity only)."),
    ] = RetentionPolicy.offset_window,
    age_only: Annotated[
        bool, typer.Option("--age-only", help="Prune on age alone, with no offset window "
                           "(business-key ledgers).")
    ] = False,
    min_age_seconds: Annotated[
        float | None, typer.Option(min=0, metavar="SECONDS",
                                   help="Keep identities applied more recently than this.")
    ] = None,
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
    app_id: AppIdOpt = DEFAULT_APP_ID,
    iceberg_catalog: IcebergCatalogOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Delete identities that can no longer be redelivered (see docs/checkpoint-dedup.md)."""
    default_age = RetentionPolicy.min_age
    try:
        policy = RetentionPolicy(
            offset_window=None if age_only else offset_window,
            min_age=dt.timedelta(seconds=min_age_seconds) if min_age_seconds is not None
            else default_age,
        )
        result = _open(ledger, storage_option, app_id, iceberg_catalog).prune(policy)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    print(f"pruned {result.deleted_rows} identities from {ledger}")
    for (topic, partition), cutoff in sorted(result.cutoffs.items()):
        print(f"  {topic}[{partition}]: offsets below {cutoff} eligible")


@dedup.command("compact")
def compact_command(
    ledger: LedgerArg,
    target_size: Annotated[
        int | None,
        typer.Option(min=1, metavar="BYTES", help="Target file size (delta-rs default)."),
    ] = None,
    vacuum_retention_hours: Annotated[
        float,
        typer.Option(min=0, metavar="HOURS",
                     help="Keep replaced files this long before deleting them."),
    ] = DEFAULT_VACUUM_RETENTION.total_seconds() / 3600,
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
    app_id: AppIdOpt = DEFAULT_APP_ID,
    iceberg_catalog: IcebergCatalogOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Rewrite small ledger files into large ones, then vacuum replaced files (on Iceberg:
    expire the snapshots older than the retention and delete the files only they reached)."""
    opened = _open(ledger, storage_option, app_id, iceberg_catalog)
    with given("LEDGER", ledger):
        result = opened.compact(target_size=target_size,
                                vacuum_retention=dt.timedelta(hours=vacuum_retention_hours))
    print(f"compacted {result.files_removed} files into {result.files_added}; "
          f"vacuumed {result.files_vacuumed} files")


@dedup.command("stats")
def stats_command(
    ledger: LedgerArg,
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
    app_id: AppIdOpt = DEFAULT_APP_ID,
    iceberg_catalog: IcebergCatalogOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Show rows, files, last recorded batch and per-partition offset coverage."""
    opened = _open(ledger, storage_option, app_id, iceberg_catalog)
    with given("LEDGER", ledger):
        stats = ledger_stats(opened)
    print(f"ledger {stats.uri}: version {stats.version}, last batch {stats.last_batch}, "
          f"{stats.rows} identities in {stats.files} files ({stats.size_bytes} bytes)")
    if stats.partitions:
        table = Table("topic", "partition", "identities", "files", "min offset", "max offset")
        for p in stats.partitions:
            table.add_row(p.topic, str(p.partition), str(p.rows), str(p.files),
                          str(p.min_offset), str(p.max_offset))
        Console().print(table)
