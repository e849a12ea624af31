"""One error family: every error class of the toolkit derives from KafkaShareEosError and keeps
the built-in base that existing ``except`` clauses catch."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Callable
from pathlib import Path

import pytest

import kafka_share_eos
from kafka_share_eos import (
    DeadLetterPolicy,
    KafkaShareEosError,
    MissingExtraError,
    RecordIdentity,
    TopicSpec,
)
from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.ledger import RetentionPolicy
from kafka_share_eos.twophase import FileDecisionLog, TransactionCoordinator

# They stand for a failure of the user's own code (the demo's crash, the verifier's poison
# record), so catching the toolkit's family must not catch them.
SIMULATED_USER_FAILURES = {"SimulatedCrash", "PoisonRecordError"}

BUILT_IN_BASES = {
    "kafka_share_eos.source.options.SourceOptionError": ValueError,
    "kafka_share_eos.source.journal.JournalError": RuntimeError,
    "kafka_share_eos.source.session.SessionClosed": RuntimeError,
    "kafka_share_eos.sinks.errors.SinkConfigurationError": ValueError,
    "kafka_share_eos.sinks.errors.MissingColumnsError": ValueError,
    "kafka_share_eos.sinks.errors.TargetTableError": ValueError,
    "kafka_share_eos.sinks.errors.CommitConflictError": RuntimeError,
    "kafka_share_eos.twophase.protocol.TwoPhaseCommitError": RuntimeError,
    "kafka_share_eos.twophase.postgres.PreparedTransactionsDisabledError": RuntimeError,
    "kafka_share_eos.strategies.quarantine.DeliveryLimitReached": Exception,
    "kafka_share_eos.strategies.quarantine.NullIdentityError": ValueError,
    "kafka_share_eos.strategies.screening.TransformShapeError": ValueError,
    "kafka_share_eos.sharegroup.librdkafka_mock.EmbeddedBrokerError": RuntimeError,
    "kafka_share_eos.sharegroup.librdkafka_mock.LibrdkafkaNotFoundError": RuntimeError,
    "kafka_share_eos.testing.postgres.PostgresNotFoundError": RuntimeError,
    "kafka_share_eos.verify.process.Stopped": RuntimeError,
    "kafka_share_eos.errors.ConfigurationError": ValueError,
    "kafka_share_eos.errors.MissingExtraError": ImportError,
}


def _toolkit_error_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in a module of the toolkit, by its dotted path."""
    names = {"kafka_share_eos", "kafka_share_eos.strategies"}
    for package in sorted(names):
        path = importlib.import_module(package).__path__
        names.update(m.name for m in pkgutil.walk_packages(path, package + "."))
    found = {}
    for name in sorted(names):
        for _, value in inspect.getmembers(importlib.import_module(name), inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == name:
                found[f"{name}.{value.__qualname__}"] = value
    return found


def test_every_error_class_of_the_toolkit_is_in_the_family() -> None:
    classes = _toolkit_error_classes()

    outside = sorted(
        path for path, cls in classes.items()
        if not issubclass(cls, KafkaShareEosError) and cls.__name__ not in SIMULATED_USER_FAILURES
    )
    assert not outside, f"error classes outside KafkaShareEosError: {outside}"
    assert set(BUILT_IN_BASES) <= set(classes)


@pytest.mark.parametrize("path", sorted(BUILT_IN_BASES))
def test_each_error_keeps_its_built_in_base(path: str) -> None:
    module, _, name = path.rpartition(".")
    cls = getattr(importlib.import_module(module), name)

    assert issubclass(cls, KafkaShareEosError)
    assert issubclass(cls, BUILT_IN_BASES[path])


@pytest.mark.parametrize(
    "refused",
    [
        lambda tmp: TopicSpec.parse("no spaces:3"),
        lambda tmp: RetentionPolicy(offset_window=None, min_age=None),
        lambda tmp: DeadLetterPolicy(SqlDeadLetters("sqlite://"), max_delivery_count=0),
        lambda tmp: RecordIdentity.of([]),
        lambda tmp: TransactionCoordinator(FileDecisionLog(str(tmp)), [], "app"),
    ],
    ids=["topic spec", "retention", "delivery limit", "identity", "participants"],
)
def test_refused_arguments_are_configuration_errors(
    refused: Callable[[Path], object], tmp_path: Path
) -> None:
    with pytest.raises(ConfigurationError) as raised:
        refused(tmp_path)

    assert isinstance(raised.value, KafkaShareEosError)
    assert isinstance(raised.value, ValueError)


def test_the_family_is_at_the_top_and_catches_refusals() -> None:
    from kafka_share_eos import IdempotentUpsertSink

    assert kafka_share_eos.KafkaShareEosError is KafkaShareEosError
    with pytest.raises(KafkaShareEosError, match="write_path must be one of"):
        IdempotentUpsertSink.sql("sqlite://", "t", write_path="sideways")  # type: ignore[arg-type]
    error = MissingExtraError("a feature", "deltalake", "delta")
    assert isinstance(error, ImportError) and error.name == "deltalake"
    assert str(error) == (
        "deltalake is not installed (used by a feature): pip install 'kafka-share-eos[delta]'"
    )
    assert issubclass(ConfigurationError, ValueError)
