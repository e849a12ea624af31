"""Errors of the proving ground: its launchers could not start a component, or a verify run is
stopping. They derive from :class:`~kafka_share_eos.errors.KafkaShareEosError` like every error
the toolkit raises, but a pipeline never meets them, so they stay out of the public error table
(docs/errors.md)."""

from __future__ import annotations

from kafka_share_eos.errors import KafkaShareEosError

__all__ = [
    "KafkaLauncherError", "PostgresNotFoundError", "PostgresServerError", "SparkClusterError",
    "SparkConnectServerError", "Stopped",
]


class KafkaLauncherError(KafkaShareEosError, RuntimeError):
    """The Apache Kafka launcher of :mod:`~kafka_share_eos.proving_ground.launchers` could not
    fetch, start or use a broker: Java or Maven is missing, Maven could not fetch the jars, or a
    broker did not come up (the message names which, and where its log is)."""


class PostgresServerError(KafkaShareEosError, RuntimeError):
    """The throwaway PostgreSQL server could not start, or was used when not running."""


class SparkClusterError(KafkaShareEosError, RuntimeError):
    """A daemon of the tests' Spark standalone cluster did not start, or its workers did not
    all register with the master."""


class SparkConnectServerError(KafkaShareEosError, RuntimeError):
    """The tests' Spark Connect server did not start (the message names its log), its port was
    taken while it was down, or it was used when not running."""


class PostgresNotFoundError(PostgresServerError):
    """No PostgreSQL server binaries could be found on this machine."""


class Stopped(KafkaShareEosError, RuntimeError):
    """The verifier is stopping: no pipeline may start any more."""


class ObjectStoreServerError(KafkaShareEosError, RuntimeError):
    """A local object store the tests write to (the S3-compatible server of
    :mod:`~kafka_share_eos.proving_ground.launchers.s3_server`, the Azure Blob emulator of
    :mod:`~kafka_share_eos.proving_ground.launchers.azurite`), or a fault proxy in front of a
    server (:mod:`~kafka_share_eos.proving_ground.launchers.toxiproxy`,
    :mod:`~kafka_share_eos.proving_ground.launchers.http_faults`), could not be fetched, built,
    started or used: its toolchain is missing, the fetch or build failed, or the server did not
    answer or refused a call (the message names which, and where its log is)."""


__all__ += ["ObjectStoreServerError"]
