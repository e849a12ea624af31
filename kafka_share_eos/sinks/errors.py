"""Errors raised by the sinks, each naming the option, table or columns at fault."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_share_eos.errors import ConfigurationError, KafkaShareEosError


class SinkConfigurationError(ConfigurationError):
    """The sink's configuration does not fit the data or the target."""


class MissingColumnsError(SinkConfigurationError):
    """Columns the sink needs are absent from the batch or from the target table."""

    def __init__(self, where: str, missing: Iterable[str], available: Iterable[str]) -> None:
        self.where = where
        self.missing = tuple(missing)
        self.available = tuple(available)
        super().__init__(
            f"{where} lacks column(s) {list(self.missing)}; available columns: "
            f"{list(self.available)}"
        )


class TargetTableError(SinkConfigurationError):
    """The target table is missing or cannot receive idempotent upserts."""


class CommitConflictError(KafkaShareEosError, RuntimeError):
    """Concurrent writers kept winning the commit race after every allowed retry."""
