"""Where a Delta table lives, and opening or creating it there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_share_eos._extras import DELTA
from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.types import check_delta_uri

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass
class DeltaLocation:
    """A Delta table's place: a local path or any object-store URI delta-rs supports.

    ``storage_options`` are passed unchanged to delta-rs (credentials, endpoints, locking);
    ``what`` names the table in the error a URI delta-rs cannot open raises.

    Raises:
        MissingExtraError: deltalake is not installed.
        ConfigurationError: ``uri``'s scheme is not one delta-rs has a store for.
    """

    uri: str
    storage_options: Mapping[str, str] | None = None
    what: str = field(default="Delta table", kw_only=True, repr=False)

    def __post_init__(self) -> None:
        # Every Delta writer starts here: fail at construction, naming the extra, rather than
        # at the first batch.
        DELTA.require("Delta tables")
        check_delta_uri(self.uri, self.what)

    def options(self) -> dict[str, str] | None:
        """The storage options as the plain dict delta-rs expects."""
        return dict(self.storage_options) if self.storage_options is not None else None

    def exists(self) -> bool:
        """Whether a Delta table is there."""
        return bool(deltalake.DeltaTable.is_deltatable(self.uri, storage_options=self.options()))

    def open(self) -> deltalake.DeltaTable | None:
        """A handle of its own on the table at its latest version; None while there is none."""
        return self._handle() if self.exists() else None

    def create(
        self,
        schema: pa.Schema,
        *,
        partition_by: Sequence[str] | None = None,
        configuration: Mapping[str, str | None] | None = None,
    ) -> deltalake.DeltaTable:
        """The table, created empty with ``schema`` (and ``partition_by``, ``configuration``)
        when there is none yet.

        Raises:
            DeltaError: delta-rs could not create the table, and no other writer did.
        """
        try:
            created = deltalake.DeltaTable.create(
                self.uri, schema, mode="ignore",
                partition_by=list(partition_by) if partition_by else None,
                configuration=dict(configuration) if configuration is not None else None,
                storage_options=self.options(),
            )
        except deltalake.exceptions.DeltaError:
            # Another writer created it at the same moment: use theirs.
            if not self.exists():
                raise
            created = self._handle()
        return self._created(created)

    def _created(self, table: deltalake.DeltaTable) -> deltalake.DeltaTable:
        """The handle :meth:`create` returns, given the one it opened (a location that keeps
        a handle keeps this one)."""
        return table

    def _handle(self) -> deltalake.DeltaTable:
        return deltalake.DeltaTable(self.uri, storage_options=self.options())
