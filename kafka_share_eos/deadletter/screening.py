"""One batch's way through ``transform`` and the dead letters, tracking every row's origin.

Each rejected row is traced back to its row in the batch as delivered, so its dead letter
carries the record's Kafka coordinates, key, value and delivery count whatever the transform
made of it. Letters are written before the rows they were split from, so a crash between the
two replays a batch whose letters are already there (writing them again adds nothing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

import pyarrow as pa

from kafka_share_eos.deadletter.letters import Rejection, letters
from kafka_share_eos.deadletter.quarantine import (
    STAGE_TRANSFORM,
    STAGE_WRITE,
    DeadLetterPolicy,
    is_data_error,
    is_transform_error,
    isolate,
    kept,
    null_identity,
    without,
)
from kafka_share_eos.errors import TransformShapeError as TransformShapeError
from kafka_share_eos.sinks import RowChecker, database_unavailable

logger = logging.getLogger("kafka_share_eos.strategies")

_ORIGIN = "__kafka_share_eos_row"


class Identity(Protocol):
    """What screening needs of a strategy's record identity
    (:class:`~kafka_share_eos.strategies.RecordIdentity`)."""

    @property
    def key_columns(self) -> tuple[str, ...]:
        """The columns that identify a record."""
        ...

    def unique_rows(self, table: pa.Table, batch_id: int) -> pa.Table:
        """The rows of batch ``batch_id`` to apply, one per identity."""
        ...


class Screening:
    """Transform, delivery limit, null identities and refused rows for one batch."""

    def __init__(
        self,
        table: pa.Table,
        batch_id: int,
        strategy: str,
        policy: DeadLetterPolicy | None,
        transform: Callable[[pa.Table], pa.Table] | None,
        applied: Callable[[pa.Table], list[bool] | None] = lambda _: None,
    ) -> None:
        self.table = table
        self.batch_id = batch_id
        self.strategy = strategy
        self.policy = policy
        self.transform = transform
        self.applied = applied
        self.duplicates_in_batch = 0
        self.dead_lettered = 0
        self._pending: list[Rejection] = []
        self._rows: pa.Table | None = None
        # The delivered row each row of ``_rows`` came from.
        self._origin: list[int] = []
        self._unique_origin: list[int] = []

    def transformed(self) -> pa.Table:
        """The rows to apply: delivery-limit rows and rows ``transform`` refused removed."""
        origin = list(range(self.table.num_rows))
        rows = self.table
        if self.policy is not None:
            over_limit = self._not_applied(self.policy.over_limit(rows))
            self._reject(over_limit, origin)
            origin = kept(rows.num_rows, over_limit)
            rows = without(rows, over_limit)
        if self.transform is not None:
            if self.policy is None:
                rows = self._apply_transform(rows)
            else:
                found = isolate(rows, self._apply_transform, _transform_row_error, STAGE_TRANSFORM)
                self._reject(found.rejections, origin)
                origin = [origin[i] for i in found.kept_indices()]
                parts = [part for _, _, part in found.results]
                rows = (
                    pa.concat_tables(parts, promote_options="permissive")
                    if parts else pa.table({})
                )
        self._rows, self._origin = rows, origin
        return rows

    def unique(self, identity: Identity) -> pa.Table:
        """The transformed rows, one per identity; null identities dead-lettered."""
        assert self._rows is not None, "transformed() comes first"
        rows, origin = self._rows, self._origin
        if self.policy is not None:
            nulls = null_identity(rows, identity.key_columns)
            self._reject(nulls, origin)
            rows, origin = without(rows, nulls), [origin[i] for i in kept(rows.num_rows, nulls)]
        tagged = rows.append_column(_ORIGIN, pa.array(origin, pa.int64()))
        unique = identity.unique_rows(tagged, self.batch_id)
        self._unique_origin = unique[_ORIGIN].to_pylist()
        self.duplicates_in_batch = rows.num_rows - unique.num_rows
        return unique.drop_columns([_ORIGIN])

    def refused_by_target(
        self,
        unique: pa.Table,
        error: Exception,
        check_rows: RowChecker | None,
    ) -> pa.Table:
        """After the target refused ``unique`` with ``error``: the rows it accepts, with the
        ones it refuses queued as dead letters. Raises ``error`` when it is not about rows.

        ``check_rows`` is given the parts in row order and closed once the rows at fault are
        found."""
        if self.policy is None or check_rows is None or not is_data_error(error):
            raise error
        logger.warning(
            "%s batch %d: the target refused the batch (%s); finding the rows at fault",
            self.strategy, self.batch_id, error,
        )
        try:
            found = isolate(unique, check_rows, is_data_error, STAGE_WRITE, failed=error)
        finally:
            check_rows.close()
        self._reject(found.rejections, self._unique_origin)
        return without(unique, found.rejections)

    def send_letters(self) -> None:
        """Write the queued dead letters (durable before the batch's rows are written)."""
        if not self._pending:
            return
        assert self.policy is not None
        batch_letters = letters(
            self.table, self._pending, strategy=self.strategy, batch_id=self.batch_id
        )
        self.policy.sink.write(batch_letters)
        first = self._pending[0]
        logger.warning(
            "%s batch %d: %d record(s) dead-lettered to %s (first: %s at stage %s: %s)",
            self.strategy, self.batch_id, len(self._pending), self.policy.sink.target,
            batch_letters["letter_id"][0].as_py(), first.stage, first.error,
        )
        self.dead_lettered += len(self._pending)
        self._pending = []

    def _not_applied(self, over_limit: list[Rejection]) -> list[Rejection]:
        """The rows at the delivery limit minus records the strategy already applied.

        Such a record is back because the acknowledgement of its applied batch was lost (a
        dropped share session, an expired lock): it is a redelivery, not poison, and goes the
        usual way, where the write finds it already applied. Dead-lettering it would make it
        both applied and dead-lettered.
        """
        if not over_limit:
            return over_limit
        rows = self.table.take(pa.array([r.index for r in over_limit], pa.int64()))
        try:
            applied = self.applied(rows)
        except Exception as error:
            # A lost connection fails the batch, to be retried; any other failure to look up
            # must not fail every batch that holds the record until the broker archives the
            # batch whole: the record is dead-lettered, as it was before lookups.
            if _is_infrastructure_error(error):
                raise
            logger.warning(
                "%s batch %d: could not look up whether %d record(s) at the delivery limit "
                "were applied (%r); dead-lettering them", self.strategy, self.batch_id,
                len(over_limit), error,
            )
            return over_limit
        if applied is None or not any(applied):
            return over_limit
        logger.info(
            "%s batch %d: %d record(s) at the delivery limit were already applied (their "
            "acknowledgement was lost); they are handled as redeliveries, not dead letters",
            self.strategy, self.batch_id, sum(applied),
        )
        return [r for r, done in zip(over_limit, applied, strict=True) if not done]

    def _reject(self, rejections: list[Rejection], origin: list[int]) -> None:
        # Rejections index the current rows; letters are built from the delivered batch.
        self._pending += [Rejection(origin[r.index], r.stage, r.error) for r in rejections]

    def _apply_transform(self, rows: pa.Table) -> pa.Table:
        assert self.transform is not None
        result = self.transform(rows)
        if not isinstance(result, pa.Table):
            try:
                result = pa.table(result)
            except (TypeError, pa.ArrowInvalid) as error:
                # Not a row's fault: every batch would be dead-lettered whole.
                raise TransformShapeError(
                    "transform must return a pyarrow Table or RecordBatch, a pandas DataFrame "
                    f"or a dict of columns, not {type(result).__name__} ({error})"
                ) from error
        if result.num_rows != rows.num_rows:
            raise TransformShapeError(
                f"transform returned {result.num_rows} rows for {rows.num_rows}: it must map "
                "each row to one row (filter rows in the sink, not in the transform)"
            )
        return result


def _is_infrastructure_error(error: BaseException) -> bool:
    """I/O, timeouts, resources, or a database connection lost or unusable."""
    return not is_transform_error(error) or database_unavailable(error)


def _transform_row_error(error: BaseException) -> bool:
    return is_transform_error(error) and not isinstance(error, TransformShapeError)
