"""``kafka-share-eos twophase``: resolve the transactions an application left in doubt.

An application that prepared a transaction and died holds the prepared rows' locks until it
comes back; other applications writing the same rows wait until then. ``twophase recover``
resolves that application's transactions from anywhere, safely even if it is still alive:
each transaction without a decision is decided ABORT first in the application's decision log
(first writer wins), and only then rolled back; one whose COMMIT decision is stored is
committed. The decisions are kept, so a live coordinator of the application cannot commit what
was rolled back: its own next recovery forgets them.
"""

from __future__ import annotations

from typing import Annotated

import typer
from pyarrow.fs import FileSelector, FileType

from kafka_share_eos.cli.errors import given
from kafka_share_eos.cli.group import Commands
from kafka_share_eos.cli.options import StorageOpt, key_values, storage_options
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.storage import open_existing
from kafka_share_eos.twophase import (
    DecisionLog,
    FileDecisionLog,
    Outcome,
    Participant,
    resolve_in_doubt,
    txid_prefix,
)

twophase = typer.Typer(
    name="twophase",
    cls=Commands,
    help="Resolve two-phase-commit transactions an application left prepared.",
    no_args_is_help=True,
)


def _decision_log(location: str, table: str, options: dict[str, str] | None) -> DecisionLog:
    if location.startswith("postgresql"):
        from kafka_share_eos.twophase.postgres_log import PostgresDecisionLog

        return PostgresDecisionLog(location, table)
    fs, root = open_existing(location, options)
    entries = [info.base_name for info in fs.get_file_info(FileSelector(root))]
    if entries and not any(name.endswith(".json") for name in entries):
        shown = ", ".join(sorted(entries)[:3]) + (", ..." if len(entries) > 3 else "")
        raise LocationNotFoundError(
            f"no decision log at {location!r}: it holds {shown}, and a FileDecisionLog holds "
            "one <txid>.json file per decision"
        )
    log = FileDecisionLog(location, options)
    if not log.first_writer_wins:
        raise ConfigurationError(
            f"{location!r} cannot refuse a second decision atomically, so resolving the "
            "application's transactions could race with the application itself; restart the "
            "application instead (it resolves them on start), or use a local path or a "
            "PostgresDecisionLog for applications that share targets"
        )
    return log


def _delta_participants(
    uri: str, prefix: str, options: dict[str, str] | None
) -> list[Participant]:
    from kafka_share_eos.twophase.delta import staged_participants

    fs, root = open_existing(uri, options)
    if fs.get_file_info(f"{root}/_delta_log").type != FileType.Directory:
        raise LocationNotFoundError(f"no Delta table at {uri!r} (it has no _delta_log)")
    return list(staged_participants(uri, prefix, options))


def _iceberg_participants(
    tables: list[str], catalog: list[str], prefix: str
) -> list[Participant]:
    from kafka_share_eos.twophase.iceberg import staged_participants

    if tables and not catalog:
        raise typer.BadParameter("name the catalog of the --iceberg tables with "
                                 "--iceberg-catalog KEY=VALUE (type=sql, uri=..., warehouse=...)")
    config = key_values(catalog, "--iceberg-catalog")
    found: list[Participant] = []
    for table in tables:
        with given("--iceberg", table):
            found.extend(staged_participants(table, config, prefix))
    return found


def _participants(
    prefix: str, postgres: list[str], delta: list[str], options: dict[str, str] | None
) -> list[Participant]:
    from kafka_share_eos.twophase.postgres import prepared_participants

    found: list[Participant] = []
    for url in postgres:
        with given("--postgres", url):
            found.extend(prepared_participants(url, prefix))
    for uri in delta:
        with given("--delta", uri):
            found.extend(_delta_participants(uri, prefix, options))
    return found


@twophase.command("recover")
def recover_command(
    app_id: Annotated[
        str, typer.Option("--app-id", metavar="ID", help="The application's app_id.")
    ],
    decision_log: Annotated[
        str,
        typer.Option("--decision-log", metavar="PATH|URL", help="The application's decision "
                     "log: the directory of its FileDecisionLog, or the postgresql+psycopg:// "
                     "URL of its PostgresDecisionLog."),
    ],
    postgres: Annotated[
        list[str],
        typer.Option("--postgres", metavar="URL", help="URL of a database where the "
                     "application prepares transactions (every participant there is "
                     "resolved); repeatable."),
    ] = [],  # noqa: B006 - typer reads the default, never mutated
    delta: Annotated[
        list[str],
        typer.Option("--delta", metavar="PATH", help="Path or URI of a Delta table the "
                     "application stages files in; repeatable."),
    ] = [],  # noqa: B006 - typer reads the default, never mutated
    iceberg: Annotated[
        list[str],
        typer.Option("--iceberg", metavar="TABLE", help="Identifier of an Iceberg table the "
                     "application stages files in (db.payments), in the --iceberg-catalog; "
                     "repeatable."),
    ] = [],  # noqa: B006 - typer reads the default, never mutated
    iceberg_catalog: Annotated[
        list[str],
        typer.Option("--iceberg-catalog", metavar="KEY=VALUE", help="A setting of the "
                     "--iceberg tables' pyiceberg catalog (type=sql, uri=..., warehouse=...); "
                     "repeatable."),
    ] = [],  # noqa: B006 - typer reads the default, never mutated
    decision_table: Annotated[
        str, typer.Option(metavar="TABLE", help="Table of a PostgresDecisionLog.")
    ] = "kse_2pc_decisions",
    storage_option: StorageOpt = [],  # noqa: B006 - typer reads the default, never mutated
) -> None:
    """Commit or roll back every transaction the application --app-id left prepared, fenced by
    its decision log: one line per transaction. Pass every database, Delta table and Iceberg
    table the application writes."""
    if not postgres and not delta and not iceberg:
        raise typer.BadParameter("name at least one --postgres database, --delta table or "
                                 "--iceberg table")
    try:
        prefix = txid_prefix(app_id)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--app-id") from exc
    options = storage_options(storage_option)
    with given("--decision-log", decision_log):
        log = _decision_log(decision_log, decision_table, options)
    participants = [*_participants(prefix, postgres, delta, options),
                    *_iceberg_participants(iceberg, iceberg_catalog, prefix)]
    report = resolve_in_doubt(log, participants, prefix, forget=False)
    outcomes = report.transactions()
    if not outcomes:
        print(f"{app_id}: no transaction in doubt")
        return
    for txid, outcome in outcomes.items():
        tokens = report.committed if outcome is Outcome.COMMIT else report.aborted
        parts = sorted({t.participant for t in tokens if t.txid == txid})
        how = ("committed (its COMMIT decision was stored)" if outcome is Outcome.COMMIT
               else "rolled back (ABORT decided here)" if txid in report.aborts_written
               else "rolled back (its ABORT decision was stored)")
        print(f"{txid}: {how}: {', '.join(parts)}")
