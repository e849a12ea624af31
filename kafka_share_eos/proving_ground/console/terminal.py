"""The terminal of a local run: the demo's and the examples' output, quiet and readable.

A run prints one line per stage, a progress bar while something long happens, one line per
simulated crash and its results; Spark's and the JVM's logs, librdkafka's warnings and Python
tracebacks go to a log file (:mod:`~kafka_share_eos.proving_ground.console.logfile`) whose path
closes the output. A failure prints its cause and that path, not a stack trace.
"""

from __future__ import annotations

import contextlib
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, TextIO, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from kafka_share_eos._libs import spark_errors, spark_sql
from kafka_share_eos.proving_ground.console.cause import failure_cause
from kafka_share_eos.proving_ground.console.crash import SimulatedCrash
from kafka_share_eos.proving_ground.console.logfile import StderrToFile
from kafka_share_eos.proving_ground.signals import Terminated, exit_status, sigterm_unwinds

if TYPE_CHECKING:
    from kafka_share_eos.strategies import ReportTotals

T = TypeVar("T")


class ReportingStrategy(Protocol):
    """A ``foreachBatch`` strategy keeping totals over its batches."""

    def __call__(self, batch_df: spark_sql.DataFrame, batch_id: int) -> object: ...

    @property
    def totals(self) -> ReportTotals: ...


class RunConsole:
    """The terminal of a run, as a context manager around the whole run.

    Inside the block, everything written to stderr (by this process, Spark's JVM and its
    Python workers) goes to ``log_path``. When the block ends the log's path is printed. An
    exception leaving the block is reported as its cause and the log's path on stderr, its
    traceback goes to the log, and the program exits with status 1 (130 after Ctrl-C, 143 after
    SIGTERM, which unwinds the block like Ctrl-C does); ``SystemExit`` passes through.

    Args:
        title: names the run in the log.
        log_path: the log file, appended to.

    Raises:
        SystemExit: on leaving the block with an exception other than ``SystemExit``: status 1,
            130 for ``KeyboardInterrupt``, 143 for SIGTERM.
    """

    def __init__(self, title: str, log_path: Path) -> None:
        self.title = title
        self.log_path = log_path
        self.console = Console(highlight=False)
        self._stderr = StderrToFile(log_path, title)
        self._signals = sigterm_unwinds()
        self._log: TextIO | None = None
        self._spark: spark_sql.SparkSession | None = None

    def __enter__(self) -> Self:
        self._log = self._stderr.__enter__()
        self._signals.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        failed = exc is not None and not isinstance(exc, SystemExit)
        # Read before Spark stops: a Spark error fetches its message from the JVM.
        cause = failure_cause(exc) if failed and exc is not None else None
        try:
            if failed and self._log is not None:
                traceback.print_exception(exc, file=self._log)
            if self._spark is not None:
                # Stopping a broken session may fail too; the first error is the one to report.
                with contextlib.suppress(Exception) if failed else contextlib.nullcontext():
                    self._spark.stop()
        finally:
            self._signals.__exit__(None, None, None)
            self._stderr.__exit__(exc_type, exc, tb)
        log = escape(str(self.log_path))
        if cause is None:
            self.stage(f"[dim]Spark's and the JVM's logs: {log}[/]")
            return
        terminal = Console(stderr=True, highlight=False)
        if isinstance(exc, KeyboardInterrupt):
            how = "stopped by SIGTERM" if isinstance(exc, Terminated) else "interrupted"
            terminal.print(f"{how}; everything the run started is stopped; Spark's and the "
                           f"JVM's logs: {log}", soft_wrap=True)
            raise SystemExit(exit_status(exc)) from None
        terminal.print(f"[red]failed:[/] {escape(cause)}")
        terminal.print(f"the whole error, and Spark's and the JVM's logs: {log}", soft_wrap=True)
        raise SystemExit(1) from None

    def stage(self, message: str) -> None:
        """One line saying what the run did (rich markup allowed; never wrapped, so that a
        path stays whole)."""
        self.console.print(message, soft_wrap=True)

    def progress(self, *columns: str | ProgressColumn, transient: bool = False) -> Progress:
        """A rich progress display on this terminal (use it as a context manager)."""
        # Python's stderr stays on the log: rich would otherwise print it above the bar.
        return Progress(*columns, console=self.console, transient=transient,
                        redirect_stderr=False)

    @contextlib.contextmanager
    def waiting(self, doing: str) -> Iterator[None]:
        """A spinner saying what the run is doing while the block runs; it leaves no line."""
        if not self.console.is_terminal:  # rich would leave an empty line in a file or pipe
            yield
            return
        with self.progress(SpinnerColumn(), TextColumn(doing), TimeElapsedColumn(),
                           transient=True) as spinner:
            spinner.add_task(doing, total=None)
            yield

    def started(
        self, stack: contextlib.ExitStack[bool | None], what: str, server: AbstractContextManager[T]
    ) -> T:
        """Enter ``server`` on ``stack`` under a spinner, then say that ``what`` started."""
        with self.waiting(f"starting {what}"):
            value = stack.enter_context(server)
        self.stage(f"{what} started")
        return value

    def spark(self, app_name: str) -> spark_sql.SparkSession:
        """A local Spark session logging to this run's log; it is stopped when the run ends."""
        from kafka_share_eos.proving_ground.launchers.jvm import archive_path
        from kafka_share_eos.proving_ground.launchers.spark import local_spark_session

        archive = archive_path()
        first = archive is not None and not archive.exists()
        started = time.monotonic()
        with self.waiting("starting Spark" + (
            " (its first start here also makes a class archive: a minute or two)" if first else ""
        )):
            spark = self._spark = local_spark_session(app_name)
        spark.sparkContext.setLogLevel("WARN")  # in the log file: warnings help there
        made = first and archive is not None and archive.exists()
        self.stage(f"Spark {spark.version} started in {time.monotonic() - started:.0f} s" + (
            ", making its class archive once for this installation: later starts skip that"
            if made else ""))
        return spark

    @contextlib.contextmanager
    def tracking(
        self, strategy: ReportingStrategy, total: int | None, unit: str
    ) -> Iterator[Callable[[spark_sql.DataFrame, int], None]]:
        """A ``foreachBatch`` function running ``strategy`` under a progress bar of the
        ``unit`` it has applied (written or dead-lettered) out of ``total`` (None: unknown)."""
        with self.progress(
            TextColumn(unit), BarColumn(bar_width=20), MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
        ) as bar:
            task = bar.add_task(unit, total=total, detail="")

            def pipeline(batch_df: spark_sql.DataFrame, batch_id: int) -> None:
                strategy(batch_df, batch_id)
                totals = strategy.totals
                bar.update(
                    task, completed=totals.rows_written + totals.dead_lettered,
                    detail=f"{totals.batches} batches · "
                           f"{totals.duplicates_in_batch + totals.already_applied} absorbed",
                )

            yield pipeline

    def drain(self, start: Callable[[], spark_sql.streaming.query.StreamingQuery]) -> None:
        """Run the query ``start`` starts until it ends. After a :class:`SimulatedCrash` it is
        started again, as a scheduler would restart a failed job, and the crash is one line.

        Raises:
            StreamingQueryException: the query failed for any other reason.
        """
        from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners

        while True:
            query = start()
            try:
                query.awaitTermination()
                return
            except spark_errors.StreamingQueryException as failure:
                crash = SimulatedCrash.named_in(str(failure))
                if crash is None:
                    raise
            # The restart must not share the group with the crashed query's departing consumer.
            wait_for_source_runners(spark_sql.SparkSession.active())
            self.stage(f"[yellow]{crash}: restarting[/]")
