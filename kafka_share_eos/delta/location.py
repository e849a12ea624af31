"""Where a Delta table lives, and opening or creating it there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_share_eos._extras import DELTA
from kafka_share_eos._libs import deltalake
from kafka_share_eos.delta.types import check_delta_uri
from kafka_share_eos.errors import ConfigurationError

# delta-rs commits a version by creating its log file only if absent; on S3 that is a put with
# If-None-Match (``etag``), or a lock held elsewhere (a locking provider such as DynamoDB).
_S3_SCHEMES = frozenset({"s3", "s3a"})
_CONDITIONAL_PUT = "conditional_put"
_LOCKING_PROVIDER = "s3_locking_provider"


def _setting(options: Mapping[str, str], name: str) -> tuple[str, str] | None:
    """The option naming delta-rs' setting ``name`` (spelt ``name``, ``aws_name`` or upper
    case), with its value."""
    for key, value in options.items():
        if key.lower().removeprefix("aws_") == name:
            return key, value
    return None

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass
class DeltaLocation:
    """A Delta table's place: a local path or any object-store URI delta-rs supports.

    ``storage_options`` are passed to delta-rs (credentials, endpoints, locking); on S3 the
    toolkit adds ``aws_conditional_put=etag`` unless they name a commit mode, so several
    writers (two applications on one ledger, an OPTIMIZE on the target) never commit the same
    version twice whatever the environment says. ``what`` names the table in the error a URI
    delta-rs cannot open raises.

    Raises:
        MissingExtraError: deltalake is not installed.
        ConfigurationError: ``uri``'s scheme is not one delta-rs has a store for, or its
            options turn S3's conditional puts off with no locking provider instead.
    """

    uri: str
    storage_options: Mapping[str, str] | None = None
    what: str = field(default="Delta table", kw_only=True, repr=False)

    def __post_init__(self) -> None:
        # Every Delta writer starts here: fail at construction, naming the extra, rather than
        # at the first batch.
        DELTA.require("Delta tables")
        check_delta_uri(self.uri, self.what)
        self._check_commits_are_safe()

    @property
    def on_s3(self) -> bool:
        """Whether the table is on S3 (or a store speaking its protocol)."""
        return self.uri.partition("://")[0].lower() in _S3_SCHEMES

    def _check_commits_are_safe(self) -> None:
        given = self.storage_options or {}
        mode = _setting(given, _CONDITIONAL_PUT)
        if (self.on_s3 and mode is not None and mode[1].lower() == "disabled"
                and _setting(given, _LOCKING_PROVIDER) is None):
            raise ConfigurationError(
                f"{self.what} {self.uri!r}: storage option {mode[0]}={mode[1]} with no "
                "locking provider lets two writers commit the same table version on S3, and "
                "one commit would be lost; leave it out (the toolkit asks for conditional "
                "puts, etag) or set a locking provider (aws_s3_locking_provider=dynamodb)"
            )

    def options(self) -> dict[str, str] | None:
        """The storage options as the plain dict delta-rs expects (with the commit mode on
        S3)."""
        options = dict(self.storage_options or {})
        if (self.on_s3 and _setting(options, _CONDITIONAL_PUT) is None
                and _setting(options, _LOCKING_PROVIDER) is None):
            options["aws_conditional_put"] = "etag"
        return options or None

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
        # delta-rs refuses a property that is not Delta's (a typo) unless told it is meant:
        # the toolkit's own (a format version) are not Delta's.
        own_keys = any(not key.startswith("delta.") for key in configuration or {})
        try:
            created = deltalake.DeltaTable.create(
                self.uri, schema, mode="ignore",
                partition_by=list(partition_by) if partition_by else None,
                configuration=dict(configuration) if configuration is not None else None,
                storage_options=self.options(),
                raise_if_key_not_exists=not own_keys,
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
