"""The error family: every error kafka-share-eos raises on purpose is a :class:`KafkaShareEosError`.

Each class also keeps the built-in base it always had (``ValueError`` for bad configuration,
``RuntimeError`` for failures at run time, ``ImportError`` for a missing extra,
``FileNotFoundError`` for a location with nothing to inspect), so code that catches those keeps
working. docs/errors.md lists every class, when it is raised and what to do.

This module imports only the standard library: every other module may import it.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = [
    "AppIdConflictError",
    "BatchIdReusedError",
    "ClaimConflictError",
    "CommitConflictError",
    "ConfigurationError",
    "DatabaseUnavailableError",
    "DatabaseUnreachableError",
    "DecisionOverruledError",
    "DeliveryLimitReached",
    "GroupConfigError",
    "JournalError",
    "KafkaAccessError",
    "KafkaShareEosError",
    "KafkaTransactionError",
    "LocationNotFoundError",
    "MissingColumnsError",
    "MissingExtraError",
    "NullIdentityError",
    "ObjectStoreError",
    "PreparedTransactionsDisabledError",
    "SessionClosed",
    "ShareGroupNotReadCommittedError",
    "SinkConfigurationError",
    "SourceOptionError",
    "StoreUnreachableError",
    "TargetTableError",
    "TransformShapeError",
    "TwoPhaseCommitError",
    "UnsupportedFormatError",
    "ValueNotStorableError",
]


class KafkaShareEosError(Exception):
    """Base of every error kafka-share-eos raises on purpose."""


class AppIdConflictError(KafkaShareEosError, RuntimeError):
    """Another application, or an earlier checkpoint, records batches under the same ``app_id``
    in a ledger or table that must hold one application's batches per ``app_id``."""


class ConfigurationError(KafkaShareEosError, ValueError):
    """An argument or option has a value the toolkit cannot work with, or a table it was
    pointed at is not what that feature needs."""


class GroupConfigError(KafkaShareEosError, RuntimeError):
    """The brokers refused to describe or alter a share group's configs, or did not apply a
    change in time."""


class ShareGroupNotReadCommittedError(KafkaShareEosError, RuntimeError):
    """The source's share group would deliver records of aborted transactions
    (``share.isolation.level`` is not ``read_committed``) and the source may not change it."""


class KafkaAccessError(KafkaShareEosError, RuntimeError):
    """A secured cluster refused the pipeline: its sign-in (user or password), or by an ACL a
    share group or topic it reads or writes. The message names the user and the resource."""




class ObjectStoreError(KafkaShareEosError, RuntimeError):
    """An object store cannot hold a file the toolkit must write first-writer-wins: it accepted
    a second create of one key (no conditional writes), so it is refused before any record is
    read; the message names the location and what is missing."""


class StoreUnreachableError(KafkaShareEosError, OSError):
    """An object store or file system could not be reached or refused access at a location the
    toolkit was asked to inspect (a journal, a Spark checkpoint, a decision log): a wrong
    endpoint, a store that is down, credentials refused. The message names the location; the
    store's error is the cause."""


class LocationNotFoundError(KafkaShareEosError, FileNotFoundError):
    """Nothing is at a location the toolkit was asked to inspect: a journal, a Spark
    checkpoint or an identity ledger that does not exist (yet)."""


class MissingExtraError(KafkaShareEosError, ImportError):
    """A feature needs an optional dependency that is not installed.

    ``extra`` names the package extra that installs it (``pip install 'kafka-share-eos[extra]'``)
    and ``name`` the module that is missing. When the library is installed but too old to have
    the module the feature imports, ``installed`` is its version and ``lacking`` that module.
    """

    def __init__(self, feature: str, module: str, extra: str, *, installed: str | None = None,
                 lacking: str | None = None) -> None:
        if installed is None:
            message = (f"{module} is not installed (used by {feature}): "
                       f"pip install 'kafka-share-eos[{extra}]'")
        else:
            message = (f"{module} {installed} is too old for {feature}: it has no {lacking}; "
                       f"pip install --upgrade 'kafka-share-eos[{extra}]'")
        super().__init__(message, name=module)
        self.feature = feature
        self.extra = extra
        self.installed = installed


# -- Configuration: a value, option or table the toolkit cannot work with


class SourceOptionError(ConfigurationError):
    """An option of the ``kafka-share`` source is missing, unknown or has a bad value."""


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
    """The target is missing or cannot receive the strategy's writes: a SQL table that does
    not exist (without ``create_table=True``) or has no unique key on the key columns, a path
    holding something other than a Delta table, a Kafka topic that does not exist."""


class ValueNotStorableError(KafkaShareEosError, ValueError):
    """A value of a batch does not fit its column's type in the target (an integer out of range,
    text that is no number); a dead-letter policy takes the row instead of failing the batch."""


class TransformShapeError(SinkConfigurationError):
    """A ``transform`` returned a number of rows other than it was given."""


# -- Run time: the source, the sinks and the ledger


class KafkaTransactionError(KafkaShareEosError, RuntimeError):
    """A Kafka topic sink's transaction failed, timed out or was fenced by a newer writer of the
    same application; nothing of the batch was committed."""


class BatchIdReusedError(KafkaShareEosError, RuntimeError):
    """A batch id that a target or a ledger already recorded came again with records it did not
    hold then: a batch id names one set of records, and skipping the batch as a replay would
    count records as applied that never were."""


class JournalError(KafkaShareEosError, RuntimeError):
    """A journal segment is missing or unreadable, or a segment or lease could not be written
    (a full disk, no permission): the message names the file, the OS error is the cause."""


class UnsupportedFormatError(KafkaShareEosError, RuntimeError):
    """A file, record or table the toolkit reads back (journal, lease, metrics, two-phase
    decision or manifest, ledger, progress marker) is in a format newer than this version
    reads: it was written by a later release. The message names where it is and the versions
    found and read."""


class SessionClosed(KafkaShareEosError, RuntimeError):
    """The share consumer of the session was closed."""


class CommitConflictError(KafkaShareEosError, RuntimeError):
    """Concurrent writers kept winning the commit race after every allowed retry."""


class ClaimConflictError(KafkaShareEosError, RuntimeError):
    """Concurrent claims kept winning the ledger's commit race for every attempt."""


class DatabaseUnavailableError(KafkaShareEosError, ConnectionError):
    """The connection to a SQL database (PostgreSQL) was lost while the toolkit wrote or read
    it. The message names the database (its URL without the password) and the operation; the
    driver's error is the cause. Whether a commit sent on the lost connection took effect is
    unknown: the batch fails, and a restart of the query on the same checkpoint applies it
    exactly once. A connection that never opened raises the subclass
    :class:`DatabaseUnreachableError`."""


class DatabaseUnreachableError(DatabaseUnavailableError):
    """A connection to a SQL database (PostgreSQL, or a SQLite file) never opened: refused,
    timed out, an unknown host or database, a sign-in refused. Nothing of the operation reached
    the database. Raised when a strategy checks its targets before the query reads any record
    (then no record was read or written), or when a batch finds the database gone; the message
    names the database, its host and port, and the driver's reason."""


# -- Two-phase commit


class TwoPhaseCommitError(KafkaShareEosError, RuntimeError):
    """Base class of the errors raised by the two-phase-commit machinery."""


class DecisionOverruledError(TwoPhaseCommitError):
    """Another process decided this transaction first: its ABORT decision is the stored one.

    The coordinator rolled back what it prepared, so nothing of the batch was applied; the batch
    is applied when Spark runs it again (restart the query).
    """


class PreparedTransactionsDisabledError(TwoPhaseCommitError):
    """The Postgres server does not allow prepared transactions (``max_prepared_transactions``)."""


# -- The errors on dead letters: never raised, they describe why a record was set aside


class DeliveryLimitReached(KafkaShareEosError):
    """A record was delivered ``max_delivery_count`` times without its batch completing."""


class NullIdentityError(KafkaShareEosError, ValueError):
    """A row's identity column is null, so its redeliveries could never be recognised."""

