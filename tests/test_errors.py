"""One error family: every error class of the toolkit derives from KafkaShareEosError and keeps
the built-in base that existing ``except`` clauses catch."""

from __future__ import annotations

import ast
import builtins
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
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger import IdentityLedger, RetentionPolicy
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.spark_checkpoint import diagnose
from kafka_share_eos.twophase import FileDecisionLog, TransactionCoordinator

# They stand for a failure of the user's own code (the demo's crash, the verifier's poison
# record), so catching the toolkit's family must not catch them.
SIMULATED_USER_FAILURES = {"SimulatedCrash", "PoisonRecordError"}

BUILT_IN_BASES = {
    "kafka_share_eos.errors.SourceOptionError": ValueError,
    "kafka_share_eos.errors.JournalError": RuntimeError,
    "kafka_share_eos.errors.SessionClosed": RuntimeError,
    "kafka_share_eos.errors.SinkConfigurationError": ValueError,
    "kafka_share_eos.errors.MissingColumnsError": ValueError,
    "kafka_share_eos.errors.TargetTableError": ValueError,
    "kafka_share_eos.errors.CommitConflictError": RuntimeError,
    "kafka_share_eos.errors.DatabaseUnavailableError": ConnectionError,
    "kafka_share_eos.errors.DatabaseUnreachableError": ConnectionError,
    "kafka_share_eos.errors.TwoPhaseCommitError": RuntimeError,
    "kafka_share_eos.errors.PreparedTransactionsDisabledError": RuntimeError,
    "kafka_share_eos.errors.DeliveryLimitReached": Exception,
    "kafka_share_eos.errors.NullIdentityError": ValueError,
    "kafka_share_eos.errors.TransformShapeError": ValueError,
    "kafka_share_eos.proving_ground.broker.errors.EmbeddedBrokerError": RuntimeError,
    "kafka_share_eos.proving_ground.broker.errors.LibrdkafkaNotFoundError": RuntimeError,
    "kafka_share_eos.proving_ground.errors.PostgresServerError": RuntimeError,
    "kafka_share_eos.proving_ground.errors.PostgresNotFoundError": RuntimeError,
    "kafka_share_eos.proving_ground.errors.Stopped": RuntimeError,
    "kafka_share_eos.errors.ConfigurationError": ValueError,
    "kafka_share_eos.errors.MissingExtraError": ImportError,
    "kafka_share_eos.errors.LocationNotFoundError": FileNotFoundError,
    "kafka_share_eos.errors.GroupConfigError": RuntimeError,
    "kafka_share_eos.errors.ShareGroupNotReadCommittedError": RuntimeError,
    "kafka_share_eos.proving_ground.errors.KafkaLauncherError": RuntimeError,
}

ROOT = Path(__file__).resolve().parent.parent

# Built-in exceptions the toolkit raises itself that stay outside the family, and why.
BUILT_IN_RAISES = {
    "AttributeError": "a module's __getattr__ reports a missing name, as Python's protocol asks",
    "AssertionError": "code that cannot be reached",
    "TypeError": "an argument of the wrong type, as in any Python library",
    "NotImplementedError": "a store that cannot refuse a second writer; the source's options "
    "refuse such a journalPath before it is used",
    "SystemExit": "a signal handler ends the process the way Python's own does",
    "KeyboardInterrupt": "a signal handler ends the process the way Python's own does",
}
# Where a built-in error reports a broken run of a tool or helper, not a refusal of a pipeline:
# a verify run whose records could not be produced, a test helper that timed out, and the share
# session's own invariant (two polls without an acknowledgement: a bug here). The benchmarks
# (kafka_share_eos/proving_ground/bench) are a harness, not a library: they are not scanned.
BUILT_IN_RAISES_AT = {
    ("kafka_share_eos/proving_ground/verify/records.py", "RuntimeError"),
    ("kafka_share_eos/proving_ground/launchers/spark.py", "TimeoutError"),
    ("kafka_share_eos/source/session.py", "RuntimeError"),
    # A pyarrow filesystem answers a call it cannot serve with OSError, as pyarrow's own do.
    ("kafka_share_eos/storage/object_store.py", "OSError"),
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

    # An interrupt stays outside: no `except Exception` (nor one of the family) may catch it.
    outside = sorted(
        path for path, cls in classes.items()
        if not issubclass(cls, KafkaShareEosError | KeyboardInterrupt)
        and cls.__name__ not in SIMULATED_USER_FAILURES
    )
    assert not outside, f"error classes outside KafkaShareEosError: {outside}"
    assert set(BUILT_IN_BASES) <= set(classes)


def test_the_errors_page_explains_every_class() -> None:
    page = (ROOT / "docs" / "errors.md").read_text()

    unexplained = sorted(
        path for path, cls in _toolkit_error_classes().items() if f"`{cls.__name__}`" not in page
    )
    assert not unexplained, f"add these to docs/errors.md: {unexplained}"


def _built_in_raises() -> list[tuple[str, str, int]]:
    """``(file, exception, line)`` of every ``raise`` of a built-in exception class."""
    found = []
    library = [
        path for path in ROOT.glob("kafka_share_eos/**/*.py")
        if path.parent.name != "bench"
    ]
    for path in sorted([*library, *ROOT.glob("strategies/*.py")]):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Raise) or node.exc is None:
                continue
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            value = getattr(builtins, raised.id, None) if isinstance(raised, ast.Name) else None
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append((str(path.relative_to(ROOT)), value.__name__, node.lineno))
    return found


def test_the_toolkit_raises_built_in_errors_only_where_they_are_the_right_answer() -> None:
    raises = _built_in_raises()

    unexplained = [
        f"{path}:{line} raises {name}" for path, name, line in raises
        if name not in BUILT_IN_RAISES and (path, name) not in BUILT_IN_RAISES_AT
    ]
    assert not unexplained, (
        "raise a class of the KafkaShareEosError family (ConfigurationError for a refused "
        f"value): {unexplained}"
    )
    assert {name for _, name, _ in raises} >= {"RuntimeError", "AttributeError"}  # it looks


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


@pytest.mark.parametrize(
    "inspect_missing",
    [
        lambda missing: journal_status(missing),
        lambda missing: IdentityLedger.existing(missing),
        lambda missing: diagnose(missing),
    ],
    ids=["journal", "ledger", "checkpoint"],
)
def test_a_location_with_nothing_to_inspect_is_named(
    inspect_missing: Callable[[str], object], tmp_path: Path
) -> None:
    missing = str(tmp_path / "nothing-here")

    with pytest.raises(LocationNotFoundError, match="nothing-here") as raised:
        inspect_missing(missing)

    assert isinstance(raised.value, KafkaShareEosError)
    assert isinstance(raised.value, FileNotFoundError)


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
