"""The shape every strategy shares: a ``foreachBatch`` callable with a Spark-free entry point.

``strategy(batch_df, batch_id)`` is what ``writeStream.foreachBatch(strategy)`` calls; it hands
the batch to :meth:`BatchStrategy.apply` as Arrow. ``apply(table, batch_id)`` takes an Arrow
table, record batch or pandas frame, so a strategy runs and is tested without Spark. On its
first batch a strategy checks that the identity columns exist; every batch is deduplicated on
the identity before anything is written, and yields one :class:`BatchReport`.
"""

from __future__ import annotations

import contextlib
import difflib
import inspect
import sys
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos.deadletter import (
    DeadLetterPolicy,
    DeadLetterSink,
    Screening,
    open_dead_letters,
)
from kafka_share_eos.errors import ConfigurationError, KafkaShareEosError
from kafka_share_eos.sinks import RowChecker, UpsertOutcome
from kafka_share_eos.sinks.target_checks import check_targets
from kafka_share_eos.strategies.identity import SOURCE_IDENTITY, RecordIdentity
from kafka_share_eos.strategies.report import BatchReport, ReportLog, ReportTotals
from kafka_share_eos.strategies.session_reports import SessionReports
from kafka_share_eos.strategies.streaming_query import ConnectQuery, streaming_query_id

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def as_arrow(data: Any) -> pa.Table:
    """An Arrow table from an Arrow table or record batch, or a pandas DataFrame.

    Raises:
        TypeError: ``data`` is none of these.
    """
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"a batch must be a pyarrow Table or RecordBatch or a pandas DataFrame, "
        f"not {type(data).__name__}"
    )


class StrategyOptions(TypedDict, total=False):
    """Options every strategy takes.

    Attributes:
        name: names the strategy in logs and reports.
        keep_reports: how many per-batch reports to keep in memory (totals cover all).
        transform: ``transform(rows) -> rows`` turns the source's rows into the rows to apply
            (e.g. decodes the value into columns), one output row per input row. With dead
            letters, a row it raises on is dead-lettered and the rest of the batch applied.
        dead_letters: a :class:`DeadLetterPolicy`, or just its sink, or the sink's URI (as
            :func:`~kafka_share_eos.deadletter.open_dead_letters` takes it): records past the
            delivery limit, that ``transform`` cannot handle, with a null identity or that the
            target refuses go there, with the error, and the rest of the batch is applied.
        metrics_path: a local file to which one JSON line per batch report is appended.
        check_on_create: whether building the strategy checks its targets
            (:meth:`BatchStrategy.check_target`); True by default. Turn it off where the
            process building the strategy cannot reach them, such as a Spark Connect client
            outside the cluster's network: the server's copy checks them when the query starts
            either way.
    """

    name: str
    keep_reports: int
    transform: Callable[[pa.Table], pa.Table]
    dead_letters: DeadLetterPolicy | DeadLetterSink | str
    metrics_path: str
    check_on_create: bool


def _refuse_unknown(strategy: type, options: Mapping[str, object]) -> None:
    """Refuse a keyword no strategy option and no parameter of ``strategy`` has: a misspelled
    ``dead_letters`` would otherwise switch the dead letters off without a word.

    Raises:
        TypeError: naming the keyword and the nearest valid one.
    """
    unknown = sorted(set(options) - set(StrategyOptions.__annotations__))
    if not unknown:
        return
    valid = set(StrategyOptions.__annotations__)
    for member in vars(strategy).values():
        function = getattr(member, "__func__", member)
        if callable(function):
            with contextlib.suppress(TypeError, ValueError):
                valid.update(inspect.signature(function).parameters)
    valid -= {"self", "cls", "options"}
    name = unknown[0]
    nearest = difflib.get_close_matches(name, sorted(valid), n=1)
    hint = f"; did you mean {nearest[0]!r}?" if nearest else ""
    raise TypeError(f"{strategy.__name__} got an unexpected keyword argument {name!r}{hint}")


def _check_batch_id(batch_id: object) -> None:
    """A batch id names one set of records in the targets' bookkeeping: Spark's are the
    non-negative integers, and anything else would be recorded, or skipped, as something else.

    Raises:
        TypeError: not an integer.
        ConfigurationError: negative.
    """
    if isinstance(batch_id, bool) or not isinstance(batch_id, int):
        raise TypeError(f"batch_id must be an integer, not {type(batch_id).__name__}")
    if batch_id < 0:
        raise ConfigurationError(f"batch_id must be 0 or more, got {batch_id}")


def _dead_letter_policy(given: object) -> DeadLetterPolicy | None:
    """``dead_letters=`` as a policy: a policy, a sink, or a sink's URI.

    Raises:
        TypeError: something else was given.
        ConfigurationError: a URI no dead-letter sink understands.
    """
    if given is None or isinstance(given, DeadLetterPolicy):
        return given
    if isinstance(given, str):
        return DeadLetterPolicy(open_dead_letters(given))
    if isinstance(given, DeadLetterSink):
        return DeadLetterPolicy(given)
    raise TypeError(
        "dead_letters must be a DeadLetterPolicy, a dead-letter sink or its URI, "
        f"not {type(given).__name__}"
    )


class BatchStrategy(ABC):
    """Base of the ``foreachBatch`` strategies.

    Subclasses implement :meth:`_prepare` (check or create the target for the batch schema, once)
    and :meth:`_write` (apply rows that are unique on the identity, report what changed), and may
    implement :meth:`_check_rows` so that rows the target refuses can be dead-lettered.
    """

    def __init__(
        self, identity: RecordIdentity, default_name: str, **options: Unpack[StrategyOptions]
    ) -> None:
        _refuse_unknown(type(self), options)
        self.identity = identity
        self.name = options.get("name") or default_name
        self._log = ReportLog(options.get("keep_reports", 1000), options.get("metrics_path"))
        self.dead_letters = _dead_letter_policy(options.get("dead_letters"))
        self.transform = options.get("transform")
        self._ready = False
        self._connect_query: ConnectQuery | None = None
        self.report_key = uuid.uuid4().hex
        """Names this object's reports in a Spark Connect session, where its copies run the
        batches (:mod:`kafka_share_eos.strategies.session_reports`)."""
        self._session_reports: SessionReports | None = None
        self._check_on_create = options.get("check_on_create", True)

    def check_target(self) -> None:
        """Check every target of the strategy, and its dead-letter sink, without writing: a
        database that answers, a table that exists (or will be created), a path that holds a
        Delta table or nothing yet, a Kafka topic that exists.

        A strategy calls it when it is built (unless ``check_on_create=False``), so that a
        target that cannot work is refused before the query reads any record, rather than
        failing the first batch after the source took the records' locks; and a copy
        unpickled by a Spark Connect server's foreachBatch worker calls it again while the
        query starts, from the server.

        Raises:
            DatabaseUnreachableError: a database could not be connected to.
            TargetTableError: a table, Delta location or Kafka topic cannot take the writes.
            PreparedTransactionsDisabledError: a two-phase participant's server cannot
                PREPARE TRANSACTION.
        """
        letters = [] if self.dead_letters is None else [self.dead_letters.sink]
        check_targets([*self._targets(), *letters])

    def _targets(self) -> Sequence[object]:
        """What the strategy writes to (anything with a ``check_target()`` is checked)."""
        return ()

    def _checked(self) -> None:
        """Check the targets, as the last step of a constructor (see :meth:`check_target`)."""
        if self._check_on_create:
            self.check_target()

    def __getstate__(self) -> dict[str, Any]:
        # A Spark Connect client pickles the strategy when the query starts; the copy finds
        # its query and the client's session again where it is unpickled.
        return {**self.__dict__, "_connect_query": None, "_session_reports": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._connect_query = ConnectQuery.of_worker()
        self._session_reports = SessionReports.of_worker(self.report_key)
        if self._connect_query is not None:
            # The server's foreachBatch worker unpickles the strategy while the query starts:
            # the targets are checked from where the batches will run, before any record.
            try:
                self.check_target()
            except KafkaShareEosError as error:
                # Spark hands the client the worker's whole traceback: without the driver's
                # chain of causes (the line names the driver's reason) the line comes first.
                raise error.with_traceback(None) from None

    @property
    def screens_rows(self) -> bool:
        """Whether batches go through ``transform`` or dead letters (driver-side work)."""
        return self.transform is not None or self.dead_letters is not None

    def __call__(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """The ``foreachBatch`` entry point.

        Raises:
            Exception: what :meth:`apply` raises; Spark fails the query with it, and the
                batch runs again when the query restarts.
        """
        return self.apply_dataframe(batch_df, batch_id)

    def _query_id(self, batch_df: DataFrame) -> str | None:
        """The id of the streaming query whose batch ``batch_df`` is (None for a static one);
        see :mod:`kafka_share_eos.strategies.streaming_query`."""
        return streaming_query_id(batch_df, self._connect_query)

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Apply a Spark DataFrame; by default it is collected to the driver as Arrow."""
        return self.apply(batch_df.toArrow(), batch_id)

    def apply(self, data: Any, batch_id: int) -> BatchReport:
        """Deduplicate and apply one batch (Arrow table/record batch or pandas DataFrame).

        A batch that raises is not recorded as applied: running it again (Spark does after a
        restart) applies what it did not.

        Raises:
            TypeError: ``data`` is not an Arrow table or record batch or a pandas DataFrame, or
                ``batch_id`` is not an integer.
            ConfigurationError: ``batch_id`` is negative.
            MissingColumnsError: the batch or the target table lacks an identity or configured
                column.
            SinkConfigurationError: a key column is null and the strategy has no dead letters,
                or a checkpoint-dedup ledger was recorded with other key columns.
            TransformShapeError: ``transform`` returned another number of rows than it was
                given.
            TargetTableError: a SQL table is missing (without ``create_table=True``), has no
                unique constraint on exactly the key columns, or refuses rows and the strategy
                has no dead letters; a Delta participant's table has other columns.
            CommitConflictError: a Delta upsert lost the commit race ``max_commit_attempts``
                times.
            AppIdConflictError: a checkpoint-dedup ledger holds a later batch of this
                ``app_id``.
            ClaimConflictError: a checkpoint-dedup batch lost the ledger's commit race on every
                attempt.
            TwoPhaseCommitError: a two-phase commit could not complete (its subclasses say why,
                e.g. :class:`PreparedTransactionsDisabledError`).
            Exception: an error of ``transform`` (without dead letters), of the user's sink, or
                of the target that is not about a row (a lost connection), unchanged.
        """
        started = time.perf_counter()
        _check_batch_id(batch_id)
        table = as_arrow(data)
        if not self.screens_rows:
            self._ensure_ready(table.schema)
            unique = self.identity.unique_rows(table, batch_id)
            outcome = self._write(unique, batch_id)
            return self._record(
                batch_id, table.num_rows, table.num_rows - unique.num_rows, outcome, started
            )
        screening = Screening(
            table, batch_id, self.name, self.dead_letters, self.transform, self._applied_records
        )
        rows = screening.transformed()
        if rows.num_rows == 0:
            # Every row was dead-lettered (or none came): the target is not touched.
            screening.send_letters()
            return self._record(
                batch_id, table.num_rows, 0, UpsertOutcome(0, 0, "none"), started,
                dead_lettered=screening.dead_lettered,
            )
        self._ensure_ready(rows.schema)
        unique = screening.unique(self.identity)
        screening.send_letters()
        try:
            outcome = self._write(unique, batch_id)
        except Exception as error:
            good = screening.refused_by_target(unique, error, self._check_rows())
            screening.send_letters()
            outcome = self._write(good, batch_id)
        return self._record(
            batch_id, table.num_rows, screening.duplicates_in_batch, outcome, started,
            dead_lettered=screening.dead_lettered,
        )

    @property
    def reports(self) -> tuple[BatchReport, ...]:
        """Reports of the latest batches (bounded), oldest first."""
        return self._log.reports

    @property
    def last_report(self) -> BatchReport | None:
        """The report of the latest batch, if any."""
        return self._log.last

    @property
    def totals(self) -> ReportTotals:
        """Sums over every batch this object handled."""
        return self._log.totals

    def _ensure_ready(self, schema: pa.Schema) -> None:
        if not self._ready:
            self.identity.check_columns(schema.names, f"the batch given to {self.name}")
            self._prepare(schema)
            self._ready = True

    def _record(
        self,
        batch_id: int,
        rows_in: int,
        duplicates_in_batch: int,
        outcome: UpsertOutcome,
        started: float,
        *,
        dead_lettered: int = 0,
    ) -> BatchReport:
        # Every write path reports through here once the sink has committed.
        faults.maybe_crash(faults.STRATEGY_AFTER_WRITE)
        report = BatchReport(
            batch_id=batch_id,
            rows_in=rows_in,
            duplicates_in_batch=duplicates_in_batch,
            already_applied=outcome.already_applied,
            rows_written=outcome.written,
            dead_lettered=dead_lettered,
            write_path=outcome.path,
            seconds=time.perf_counter() - started,
        )
        self._log.add(self.name, report)
        if self._session_reports is not None:
            self._session_reports.add(self.name, report)
        return report

    def _applied_records(self, rows: pa.Table) -> list[bool] | None:
        """For each delivered row, whether this strategy already applied that Kafka record;
        None when it cannot tell.

        Only a ``(topic, partition, offset)`` identity names the record itself: a stored
        business key may come from another record.
        """
        keys = self.identity.key_columns
        if set(keys) != set(SOURCE_IDENTITY) or not set(keys) <= set(rows.column_names):
            return None
        return self._applied(rows.select(list(keys)))

    def _applied(self, keys: pa.Table) -> list[bool] | None:
        """For each row of ``keys`` (the identity's key columns), whether the target already
        holds it; None when the strategy cannot look it up."""
        return None

    def _check_rows(self) -> RowChecker | None:
        """Checks raising what writing their rows would raise, without writing; None when
        the target cannot check rows, so a refused row fails the whole batch."""
        return None

    @abstractmethod
    def _prepare(self, schema: pa.Schema) -> None:
        """Check or create the target for batches of ``schema``; runs once, before any write."""

    @abstractmethod
    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Apply ``table`` (unique on the identity) as batch ``batch_id``."""
