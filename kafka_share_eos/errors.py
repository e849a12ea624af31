"""The error family: every error kafka-share-eos raises on purpose is a :class:`KafkaShareEosError`.

Each class also keeps the built-in base it always had (``ValueError`` for bad configuration,
``RuntimeError`` for failures at run time, ``ImportError`` for a missing extra,
``FileNotFoundError`` for a location with nothing to inspect), so code that catches those keeps
working. docs/errors.md lists every class, when it is raised and what to do.

This module imports nothing: every other module may import it.
"""

from __future__ import annotations

__all__ = [
    "AppIdConflictError",
    "ConfigurationError",
    "GroupConfigError",
    "KafkaLauncherError",
    "KafkaShareEosError",
    "LocationNotFoundError",
    "MissingExtraError",
    "ShareGroupNotReadCommittedError",
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


class KafkaLauncherError(KafkaShareEosError, RuntimeError):
    """The Apache Kafka launcher of :mod:`kafka_share_eos.testing` could not fetch, start or
    use a broker: Java or Maven is missing, Maven could not fetch the jars, or a broker did not
    come up (the message names which, and where its log is)."""


class LocationNotFoundError(KafkaShareEosError, FileNotFoundError):
    """Nothing is at a location the toolkit was asked to inspect: a journal, a Spark
    checkpoint or an identity ledger that does not exist (yet)."""


class MissingExtraError(KafkaShareEosError, ImportError):
    """A feature needs an optional dependency that is not installed.

    ``extra`` names the package extra that installs it (``pip install 'kafka-share-eos[extra]'``)
    and ``name`` the module that is missing.
    """

    def __init__(self, feature: str, module: str, extra: str) -> None:
        super().__init__(
            f"{module} is not installed (used by {feature}): "
            f"pip install 'kafka-share-eos[{extra}]'",
            name=module,
        )
        self.feature = feature
        self.extra = extra
