"""Record identity: which columns say that two rows are the same record, and which is newer."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos._names import names
from kafka_share_eos.errors import MissingColumnsError, SinkConfigurationError
from kafka_share_eos.sinks import keep_latest

SOURCE_IDENTITY = ("topic", "partition", "offset")


@dataclass(frozen=True)
class RecordIdentity:
    """The key columns of a record and, optionally, the column ordering its versions.

    By default a record is ``(topic, partition, offset)``, which is the same on every
    redelivery of a Kafka record. A business key (e.g. ``("account_id",)``) plus a version
    column (e.g. an event time or sequence number) makes the newest version of each key win,
    and an older redelivery never overwrite a newer row.

    Raises:
        SinkConfigurationError: no key column, a key column repeated, or the version column
            also a key column.
    """

    key_columns: tuple[str, ...] = SOURCE_IDENTITY
    version_column: str | None = None

    def __post_init__(self) -> None:
        if not self.key_columns:
            raise SinkConfigurationError("key_columns must name at least one column")
        if len(set(self.key_columns)) != len(self.key_columns):
            raise SinkConfigurationError(f"key_columns repeats a column: {list(self.key_columns)}")
        if self.version_column in self.key_columns:
            raise SinkConfigurationError(
                f"version_column {self.version_column!r} cannot also be a key column"
            )

    @classmethod
    def of(
        cls, key_columns: Sequence[str] | None = None, version_column: str | None = None
    ) -> RecordIdentity:
        """The identity for user options; ``None`` keys mean the Kafka record identity.

        Raises:
            SinkConfigurationError: as the constructor.
        """
        if key_columns is None:
            return cls(SOURCE_IDENTITY, version_column)
        keys = tuple(names(key_columns))
        return cls(keys, version_column)

    @property
    def required_columns(self) -> tuple[str, ...]:
        """Every column the identity reads."""
        return (*self.key_columns, *([self.version_column] if self.version_column else []))

    def check_columns(self, available: Iterable[str], where: str) -> None:
        """Raise :class:`MissingColumnsError` naming the identity columns ``available`` lacks."""
        names = list(available)
        missing = [c for c in self.required_columns if c not in names]
        if missing:
            raise MissingColumnsError(where, missing, names)

    def check_keys_present(self, table: pa.Table, batch_id: int) -> None:
        """Refuse a batch with a null key: it could never be recognised when redelivered."""
        for name in self.key_columns:
            nulls = table[name].null_count
            if nulls:
                first = pc.index(pc.is_null(table[name]), True).as_py()
                raise SinkConfigurationError(
                    f"key column {name!r} is null in {nulls} row(s) of batch {batch_id} "
                    f"(first: {_describe_row(table, first)})"
                )

    def deduplicate(self, table: pa.Table) -> pa.Table:
        """One row per identity: the newest version, or the first delivery without versions."""
        return keep_latest(table, self.key_columns, self.version_column)

    def unique_rows(self, table: pa.Table, batch_id: int) -> pa.Table:
        """The rows of batch ``batch_id`` to apply: columns and keys checked (on every batch,
        not only the first), one row per identity."""
        self.check_columns(table.column_names, f"batch {batch_id}")
        self.check_keys_present(table, batch_id)
        return self.deduplicate(table)


def _describe_row(table: pa.Table, index: int) -> str:
    """A row's Kafka coordinates when the batch has them, else its position in the batch."""
    if all(name in table.column_names for name in SOURCE_IDENTITY):
        coordinates = {name: table[name][index].as_py() for name in SOURCE_IDENTITY}
        return ", ".join(f"{k}={v!r}" for k, v in coordinates.items())
    return f"row {index}"
