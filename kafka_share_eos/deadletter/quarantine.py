"""Keeping bad records from failing a batch: find them, dead-letter them, apply the rest.

Three things divert a row to the dead letters instead of the target:

- its ``deliveryCount`` reached the policy's ``max_delivery_count``, or the share group's own
  delivery limit (it keeps coming back, so something about it kills the batch before an error
  can be caught, and on its last delivery the broker would archive it);
- the strategy's ``transform`` raises on it (a value that cannot be decoded);
- the target refuses it with a data error (a constraint or type violation).

Failing rows are found by bisection: the failing step runs again on each half, down to single
rows, so k bad rows in n cost about ``k * log2(n)`` extra attempts and every good row is kept.
When no single row fails on its own, the error was not about a row: it is raised unchanged and
the batch fails, as an infrastructure error (a lost connection, a full disk) must.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.deadletter.letters import Rejection
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.errors import ConfigurationError, ValueNotStorableError
from kafka_share_eos.errors import DeliveryLimitReached as DeliveryLimitReached
from kafka_share_eos.errors import NullIdentityError as NullIdentityError
from kafka_share_eos.journal.schema import DELIVERY_COUNT_LIMIT_KEY
from kafka_share_eos.sinks import database_unavailable, error_chain, refused_row

T = TypeVar("T")

STAGE_DELIVERY_LIMIT = "delivery-limit"
STAGE_TRANSFORM = "transform"
STAGE_IDENTITY = "identity"
STAGE_WRITE = "write"

_INFRASTRUCTURE = (OSError, MemoryError, TimeoutError, ConnectionError)


def is_data_error(error: BaseException) -> bool:
    """Whether ``error`` (or what it wraps) says a row's data is wrong, not the infrastructure.

    A database refusing a row's values (SQLSTATE class 22 or 23, or a DB-API ``IntegrityError``
    or ``DataError`` without one, whichever library raised it) and Arrow conversion errors are
    about data; connection, I/O, timeout and resource errors are not.
    """
    if refused_row(error):
        return True
    if database_unavailable(error):
        return False
    return any(
        isinstance(current, pa.ArrowInvalid | pa.ArrowTypeError | ValueNotStorableError)
        for current in error_chain(error)
    )


def is_transform_error(error: BaseException) -> bool:
    """Whether a ``transform`` failure is about the row: anything but I/O and resources."""
    return isinstance(error, Exception) and not isinstance(error, _INFRASTRUCTURE)


@dataclass
class Isolated:
    """What bisection found: the results of the parts that succeeded, in row order, and the
    rows that failed alone."""

    results: list[tuple[int, int, object]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    def kept_indices(self) -> list[int]:
        """Row indices of the rows in the succeeding parts."""
        return [i for start, length, _ in self.results for i in range(start, start + length)]


def isolate(
    table: pa.Table,
    attempt: Callable[[pa.Table], object],
    is_row_error: Callable[[BaseException], bool],
    stage: str,
    *,
    failed: Exception | None = None,
) -> Isolated:
    """Run ``attempt`` on ``table``, bisecting on row errors until every failing row is alone.

    ``failed`` is the error the whole table is already known to fail with; the table is then
    not attempted again. Raises the whole table's error when it is not a row error, or when no
    single row fails alone.
    """
    found = Isolated()

    def split(start: int, length: int, error: Exception) -> None:
        if not is_row_error(error):
            raise error
        if length == 1:
            found.rejections.append(Rejection(start, stage, error))
            return
        half = length // 2
        run(start, half)
        run(start + half, length - half)

    def run(start: int, length: int) -> None:
        try:
            found.results.append((start, length, attempt(table.slice(start, length))))
        except Exception as error:
            split(start, length, error)

    if failed is None:
        try:
            found.results.append((0, table.num_rows, attempt(table)))
            return found
        except Exception as error:
            failed = error
    if table.num_rows == 0:
        raise failed
    split(0, table.num_rows, failed)
    if not found.rejections:
        raise failed
    return found


@dataclass(frozen=True)
class DeadLetterPolicy:
    """Where a strategy puts the records it cannot apply, and when it gives up on one.

    Args:
        sink: the dead-letter sink (:class:`~kafka_share_eos.deadletter.SqlDeadLetters`,
            :class:`~kafka_share_eos.deadletter.DeltaDeadLetters`,
            :class:`~kafka_share_eos.deadletter.KafkaDeadLetters`).
        max_delivery_count: dead-letter, without applying it, a record delivered this many
            times or more. By default, and whenever it is higher, the share group's own
            ``share.delivery.count.limit`` (Kafka's default 5) takes its place where the source
            read it from the brokers (Apache Kafka): a record on its last delivery becomes a
            dead letter instead of being archived by the broker, silently. On the embedded
            broker only the number given here counts.

    Raises:
        TypeError: ``sink`` is not a dead-letter sink (a URI goes through
            :func:`~kafka_share_eos.deadletter.open_dead_letters`, or straight to a strategy's
            ``dead_letters=``).
        ConfigurationError: ``max_delivery_count`` is below 1.
    """

    sink: DeadLetterSink
    max_delivery_count: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.sink, DeadLetterSink):
            hint = (
                f": open it with open_dead_letters({self.sink!r}), or give the URI to the "
                "strategy's dead_letters="
                if isinstance(self.sink, str) else ""
            )
            raise TypeError(
                f"DeadLetterPolicy's sink must be a dead-letter sink (SqlDeadLetters, "
                f"DeltaDeadLetters, KafkaDeadLetters), not {type(self.sink).__name__}{hint}"
            )
        if self.max_delivery_count is not None and self.max_delivery_count < 1:
            raise ConfigurationError(
                f"max_delivery_count must be >= 1, got {self.max_delivery_count}"
            )

    def over_limit(self, table: pa.Table) -> list[Rejection]:
        """The rows of ``table`` whose ``deliveryCount`` reached the limit."""
        if "deliveryCount" not in table.column_names:
            return []
        limit, named = self._limit(table.schema.field("deliveryCount"))
        if limit is None:
            return []
        counts = table["deliveryCount"].to_pylist()
        return [
            Rejection(index, STAGE_DELIVERY_LIMIT, DeliveryLimitReached(
                f"delivered {count} times; {named} is {limit}"
            ))
            for index, count in enumerate(counts)
            if count is not None and count >= limit
        ]

    def _limit(self, field: pa.Field) -> tuple[int | None, str]:
        group_limit = group_delivery_limit(field)
        if group_limit is not None and (self.max_delivery_count is None
                                        or group_limit < self.max_delivery_count):
            return group_limit, "the share group's share.delivery.count.limit"
        return self.max_delivery_count, "max_delivery_count"


def group_delivery_limit(field: pa.Field) -> int | None:
    """The share group's delivery limit that the ``kafka-share`` source put in the metadata
    of the ``deliveryCount`` column, as Spark hands it to ``toArrow()`` (or as plain Arrow
    field metadata); None when it is not there."""
    metadata = field.metadata or {}
    spark = metadata.get(b"SPARK::metadata::json")
    found = json.loads(spark).get(DELIVERY_COUNT_LIMIT_KEY) if spark else None
    if found is None:
        found = metadata.get(DELIVERY_COUNT_LIMIT_KEY.encode())
    return int(found) if found is not None else None


def null_identity(table: pa.Table, key_columns: tuple[str, ...]) -> list[Rejection]:
    """The rows of ``table`` with a null identity column."""
    mask = None
    for name in key_columns:
        nulls = pc.is_null(table[name])
        mask = nulls if mask is None else pc.or_(mask, nulls)
    if mask is None or not pc.any(mask).as_py():
        return []
    indices = pc.indices_nonzero(mask).to_pylist()
    return [
        Rejection(index, STAGE_IDENTITY, NullIdentityError(
            f"identity column(s) {[n for n in key_columns if table[n][index].as_py() is None]} "
            "are null"
        ))
        for index in indices
    ]


def kept(count: int, rejections: list[Rejection]) -> list[int]:
    """Positions among ``count`` rows that were not rejected, in order."""
    rejected = {r.index for r in rejections}
    return [i for i in range(count) if i not in rejected]


def without(table: pa.Table, rejections: list[Rejection]) -> pa.Table:
    """``table`` minus the rejected rows, in order."""
    if not rejections:
        return table
    return table.take(pa.array(kept(table.num_rows, rejections), pa.int64()))
