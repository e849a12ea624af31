"""Checks that a strategy's targets are there, run before the query reads any record.

A target that cannot work (a database that does not answer, a table that is missing and will
not be created, a path holding something other than a Delta table, a Kafka topic that does not
exist) would otherwise fail the first batch, after the source took the batch's records and
their locks. Each writer, participant, decision log and dead-letter sink that can tell offers
:meth:`ChecksTarget.check_target`; a strategy calls it on every one of its targets when it is
built (docs/strategies.md#checked-before-the-first-record).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

import pyarrow as pa

from kafka_share_eos.errors import TargetTableError

if TYPE_CHECKING:
    from kafka_share_eos.delta.location import DeltaLocation
    from kafka_share_eos.sinks.sql_engine import SqlDatabase

_LOGGER = logging.getLogger("kafka_share_eos.sinks.target_checks")

KAFKA_CHECK_TIMEOUT_S = 15.0
"""How long a check waits for the Kafka cluster to list its topics."""


@runtime_checkable
class ChecksTarget(Protocol):
    """A writer, participant, decision log or dead-letter sink that can check its target
    without writing to it."""

    def check_target(self) -> None:
        """Raise, in one line, what would make writing to the target fail from the start."""
        ...


def check_targets(targets: Iterable[object]) -> None:
    """Check each of ``targets`` that can check itself (see :class:`ChecksTarget`)."""
    for target in targets:
        if isinstance(target, ChecksTarget):
            target.check_target()


def check_sql_table(
    database: SqlDatabase,
    table: str,
    key_columns: tuple[str, ...],
    *,
    db_schema: str | None = None,
    create: bool = False,
) -> None:
    """Connect to ``database`` and check that ``table`` exists with a unique key on exactly
    ``key_columns``, or is missing and will be created (``create``).

    Raises:
        DatabaseUnreachableError: no connection to the database could be opened.
        TargetTableError: the table is missing without ``create``, or has no unique key on the
            key columns; a SQLite file that is missing without ``create``, or whose directory
            does not exist.
    """
    from kafka_share_eos._libs import sa
    from kafka_share_eos.sinks.sql_engine import database_errors
    from kafka_share_eos.sinks.sql_schema import open_target

    shown = f"{db_schema}.{table}" if db_schema else table
    if not _sqlite_file_ready(database.url, shown, create):
        return
    with database_errors(database.url, f"checking table {shown!r}", before_any_record=True), \
            database.engine.connect() as conn:
        if create and not sa.inspect(conn).has_table(table, db_schema):
            return
        # An empty schema asks for no column: only the table and its unique key are checked.
        open_target(conn, table, pa.schema([]), key_columns, db_schema=db_schema, create=False)


def check_sql_database(database: SqlDatabase, what: str) -> None:
    """Open one connection to ``database``: the tables ``what`` writes are its own to create.

    Raises:
        DatabaseUnreachableError: no connection to the database could be opened.
    """
    from kafka_share_eos.sinks.sql_engine import database_errors

    with database_errors(database.url, f"checking {what}", before_any_record=True), \
            database.engine.connect():
        pass


def _sqlite_file_ready(url: str, table: str, create: bool) -> bool:
    """For a SQLite file, whether the database must still be asked about ``table`` (the file
    exists); opening a missing file would create it, so a missing one is judged here.

    Raises:
        TargetTableError: the file is missing without ``create``, or its directory is.
    """
    from kafka_share_eos._libs import sa

    parsed = sa.make_url(url)
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:") or (
            database.startswith("file:")):
        return True
    path = Path(database)
    if path.exists():
        return True
    if not create:
        raise TargetTableError(
            f"table {table!r} does not exist: the SQLite database file {str(path)!r} does not "
            "exist; check the path (sqlite:////absolute/path.db has four slashes) or pass "
            "create_table=True"
        )
    if not path.parent.is_dir():
        raise TargetTableError(
            f"the SQLite database file {str(path)!r} cannot be created: its directory "
            f"{str(path.parent)!r} does not exist"
        )
    return False


def check_delta_table(location: DeltaLocation, *, create: bool = True) -> None:
    """Check that ``location`` holds a Delta table, or, with ``create``, nothing yet (the
    writer creates the table there); a local directory with other files is refused, as a
    table created among them would mix them up with the table's.

    Raises:
        TargetTableError: no Delta table and ``create`` is off; a local path that is a file
            or a directory holding files but no Delta log; a store that could not be read.
    """
    what = f"{location.what} {location.uri!r}"
    path = _local_path(location.uri)
    if path is not None and path.is_file():
        raise TargetTableError(f"{what} is a file, not a Delta table's directory")
    try:
        if location.exists():
            return
    except Exception as error:  # delta-rs' store errors have no common class
        raise TargetTableError(
            f"{what} could not be read: {type(error).__name__}: {_first_line(error)}"
        ) from error
    if path is not None and path.is_dir() and any(path.iterdir()):
        found = sorted(entry.name for entry in path.iterdir())[:3]
        raise TargetTableError(
            f"{what} is not a Delta table (no _delta_log) but holds other files ({found}): "
            "give the path of a Delta table, or of an empty or new directory"
        )
    if not create:
        raise TargetTableError(f"{what} is not a Delta table (no _delta_log)")


def check_kafka_topic(config: Mapping[str, Any], topic: str, what: str) -> None:
    """Check that the cluster of ``config`` has ``topic``, asking for the list of topics
    (which creates none, whatever the brokers' ``auto.create.topics.enable``).

    Raises:
        TargetTableError: the topic does not exist, or the cluster did not answer in
            :data:`KAFKA_CHECK_TIMEOUT_S`.
    """
    import confluent_kafka as ck
    from confluent_kafka.admin import AdminClient

    # librdkafka's own connection failures go to the log, not the terminal: the error says it.
    settings: dict[str, Any] = {**config, "logger": _LOGGER}
    admin = AdminClient(settings)
    servers = config.get("bootstrap.servers")
    try:
        topics = admin.list_topics(timeout=KAFKA_CHECK_TIMEOUT_S).topics
    except ck.KafkaException as error:
        raise TargetTableError(
            f"{what}: the Kafka cluster at {servers} did not list its topics within "
            f"{KAFKA_CHECK_TIMEOUT_S:g} s ({error.args[0].str()}); nothing was read or written: "
            "check bootstrap.servers and the security settings"
        ) from error
    if topic not in topics:
        raise TargetTableError(
            f"{what}: topic {topic!r} does not exist on the Kafka cluster at {servers} (or "
            "the client's principal may not describe it); create it (kafka-topics.sh --create "
            "--topic ...) before starting the query"
        )


def _local_path(uri: str) -> Path | None:
    """The local path of a table URI; None for an object store's."""
    scheme = urlsplit(uri).scheme.lower()
    if scheme == "file":
        return Path(urlsplit(uri).path)
    if scheme and not (len(scheme) == 1 and os.name == "nt"):
        return None
    return Path(uri)


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else "no reason"
