"""What every dead-letter sink offers."""

from __future__ import annotations

from abc import ABC, abstractmethod

import pyarrow as pa


class DeadLetterSink(ABC):
    """Where a strategy puts the records it cannot apply.

    :meth:`write` must be durable when it returns, and writing a letter whose ``letter_id`` the
    sink already holds must not add a second one (the Kafka sink, which cannot check, says so).
    Strategies call it in the Spark driver.
    """

    @property
    @abstractmethod
    def target(self) -> str:
        """A human-readable name of the sink, for logs and errors."""

    @abstractmethod
    def write(self, letters: pa.Table) -> int:
        """Store ``letters`` (:data:`~kafka_share_eos.deadletter.DEAD_LETTER_SCHEMA`); return
        how many were new."""

    @abstractmethod
    def read(self) -> pa.Table:
        """Every stored letter."""

    def count(self) -> int:
        """How many records were dead-lettered."""
        return int(self.read().num_rows)

    def close(self) -> None:  # noqa: B027
        """Release connections; sinks that hold none need nothing."""
