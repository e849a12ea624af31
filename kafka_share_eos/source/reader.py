"""The Spark stream reader of the ``kafka-share`` source.

Offsets are ``{"seq": n}``: a batch ``(start, end]`` is the journal segments numbered
``start+1 .. end``. Planning methods run in Spark's long-lived source runner process; ``read``
runs on executors, on a pickled copy without the consumer. With ``consumers=N`` there is no
consumer in the runner: each batch is N slots whose tasks poll on the executors
(:mod:`~kafka_share_eos.source.slots`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from kafka_share_eos._extras import SPARK
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.schema import project
from kafka_share_eos.source.batch_planner import BatchPlanner
from kafka_share_eos.source.conversion import prepare_conversion
from kafka_share_eos.source.group import resolve_group
from kafka_share_eos.source.options import AckPolicy, LockBudgetAction, SourceOptions
from kafka_share_eos.source.planning import Planner, SegmentPartition
from kafka_share_eos.source.slot_planner import SlotPlanner
from kafka_share_eos.source.slots import SlotPartition
from kafka_share_eos.source.task_slots import warn_if_consumers_wait

with SPARK.needed_by("the kafka-share Spark source"):
    from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import (
        ReadAllAvailable,
        ReadLimit,
        ReadMaxRows,
        SupportsTriggerAvailableNow,
    )

_SEQ = "seq"


def _seq(offset: Any) -> int:
    if isinstance(offset, dict) and isinstance(offset.get(_SEQ), int):
        return int(offset[_SEQ])
    raise ConfigurationError(
        f"offset {offset!r} was not written by the kafka-share source (expected {{'seq': n}}): "
        "is the checkpoint shared with another query?"
    )


def _offset(seq: int) -> dict[str, int]:
    return {_SEQ: seq}


def _refuse_early_acceptance(options: SourceOptions) -> None:
    """A pipeline whose strategy REJECTs refused records into the broker's dead-letter queue
    (:class:`~kafka_share_eos.deadletter.BrokerDeadLetters`) must not ACCEPT a record before
    its strategy ran: only the runner's consumer under afterCommit acknowledges that late.

    Raises:
        ConfigurationError: naming the option that ACCEPTs too early.
    """
    early = None
    if options.ack_policy is not AckPolicy.AFTER_COMMIT or options.on_executors:
        early = f"acknowledge={options.ack_policy.value}, consumers={options.consumers}"
    elif options.lock_budget_action is LockBudgetAction.SWITCH_TO_AFTER_JOURNAL:
        early = f"lockBudgetAction={options.lock_budget_action.value}"
    if early is not None and Journal(options.journal).rejections.routed():
        raise ConfigurationError(
            f"the journal at {options.journal_path!r} belongs to a pipeline whose refused records "
            f"go to the broker's dead-letter queue (BrokerDeadLetters), which needs them "
            f"acknowledged after the batch commits: {early} ACCEPTs them before the strategy "
            "runs; use acknowledge=afterCommit with one consumer"
        )


class KafkaShareStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches from a share group through the journal, and reads them back.

    Args:
        options: the stream's options.
        session_settings: the registering session's settings that count its task slots, to
            warn when ``consumers`` exceeds them (None: not known).
    """

    def __init__(
        self, options: SourceOptions, session_settings: Mapping[str, str] | None = None
    ) -> None:
        self._options = options
        self._session_settings = session_settings
        self._journal = Journal(options.journal)
        self._planner: Planner | None = None

    def __getstate__(self) -> dict[str, Any]:
        # Executors only read the journal (or poll into it, with their own consumers); the
        # runner's planner stays in the runner.
        state = dict(self.__dict__)
        state["_planner"] = None
        return state

    def _running_planner(self) -> Planner:
        if self._planner is None:
            # In the runner only: the group is described once per query run.
            _refuse_early_acceptance(self._options)
            options = resolve_group(self._options)
            if options.on_executors:
                warn_if_consumers_wait(options.consumers, self._session_settings)
                self._planner = SlotPlanner(options, self._journal)
            else:
                # Its consumer's first poll waits out the share group's join, while Arrow's
                # one-time set-up for the conversion of that poll runs beside it.
                prepare_conversion()
                self._planner = BatchPlanner(options, self._journal)
        return self._planner

    def initialOffset(self) -> dict[str, int]:
        """Just before the oldest segment present (segments a crashed first run left are kept)."""
        present = self._journal.sequences()
        return _offset(present[0] - 1 if present else 0)

    def getDefaultReadLimit(self) -> ReadLimit:
        """``ReadMaxRows(maxRecordsPerTrigger)`` when that option is set."""
        limit = self._options.max_records_per_trigger
        return ReadAllAvailable() if limit is None else ReadMaxRows(limit)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, int]:
        """ACCEPT the committed batch (afterCommit), then poll and journal the next one."""
        max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        return _offset(self._running_planner().latest(_seq(start), max_rows))

    def prepareForTriggerAvailableNow(self) -> None:
        """A share group has no end offset: the drain ends once the group delivered nothing
        for ``availableNowIdleMs``."""
        self._running_planner().drain()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """One partition per journal segment of the batch (per slot, with ``consumers=N``)."""
        return self._running_planner().partitions(_seq(start), _seq(end))

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Read one segment from the journal: the same path on the first run and on replay
        (a slot's task polls into its segment the first time)."""
        assert isinstance(partition, SegmentPartition | SlotPartition)
        table = partition.rows(self._options, self._journal)
        return iter(project(table, self._options.include_headers).to_batches())

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark calls this late or never; ``latestOffset`` settles and purges."""

    def stop(self) -> None:
        """RELEASE the batch whose commit is unknown and leave the share group."""
        if self._planner is not None:
            self._planner.close()
