"""A public API users can see: what the README, the docs and the examples tell a user to use is
importable from ``kafka_share_eos`` (or ``kafka_share_eos.strategies``), and deep paths still
work."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kafka_share_eos
import kafka_share_eos.strategies

ROOT = Path(__file__).resolve().parents[2]
PUBLIC = ("kafka_share_eos", "kafka_share_eos.strategies")
# Helpers for tests, demos and examples on one machine, not for pipelines: they stay in
# kafka_share_eos.proving_ground (docs/development.md).
TESTING = "kafka_share_eos.proving_ground"
# Classes the docs name that users do not import: the errors of the tools (`verify`, the test
# server), the source runner's own error and counters, and the stand-ins for a failure of the
# user's code.
NAMED_NOT_IMPORTED = {
    "AckStats", "PoisonRecordError", "PostgresNotFoundError", "PostgresServerError",
    "SessionClosed", "SimulatedCrash", "SparkClusterError", "Stopped", "Terminated",
}
_IMPORT_LINE = re.compile(r"^\s*from (kafka_share_eos[\w.]*) import ([^(\n]+)$", re.MULTILINE)


def _documents() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _imports() -> list[tuple[str, str, str]]:
    """``(where, module, name)`` of every ``from kafka_share_eos... import name`` that the
    README, the docs and the examples show."""
    found = []
    for path in _documents():
        for match in _IMPORT_LINE.finditer(path.read_text()):
            names = [n.strip().split(" as ")[0] for n in match.group(2).split(",")]
            found += [(path.name, match.group(1), n) for n in names if n]
    for path in sorted((ROOT / "examples").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(PUBLIC[0]):
                found += [(path.name, str(node.module), alias.name) for alias in node.names]
    return found


def _public_names() -> set[str]:
    return {*kafka_share_eos.__all__, *kafka_share_eos.strategies.__all__}


def test_docs_and_examples_import_from_the_public_modules() -> None:
    imports = _imports()

    deep = [
        f"{where}: from {module} import {name}" for where, module, name in imports
        if module not in PUBLIC and not module.startswith(TESTING)
    ]
    assert not deep, f"import these from {' or '.join(PUBLIC)}: {deep}"
    assert {"IdempotentUpsertSink", "PostgresParticipant", "open_dead_letters"} <= {
        name for _, _, name in imports
    }  # the walk finds the imports


def test_every_toolkit_class_the_docs_name_is_public() -> None:
    defined = _toolkit_names()
    named = {
        name
        for path in _documents()
        for name in re.findall(r"`([A-Z][A-Za-z]+)\b", path.read_text())
        if name in defined
    }

    hidden = named - _public_names() - NAMED_NOT_IMPORTED
    assert not hidden, f"export these from {PUBLIC[0]}: {sorted(hidden)}"
    assert {"DeltaAppendSink", "RetentionPolicy", "DecisionLog"} <= named  # the scan finds them


@pytest.mark.parametrize("module", PUBLIC)
def test_every_name_in_all_resolves_and_is_listed_by_dir(module: str) -> None:
    package = importlib.import_module(module)

    missing = [name for name in package.__all__ if not hasattr(package, name)]
    assert not missing
    assert set(package.__all__) <= set(dir(package))
    assert len(set(package.__all__)) == len(package.__all__)


def _export_table() -> dict[str, str]:
    """The stub's table: each public name and the module it loads from."""
    tree = ast.parse((ROOT / "kafka_share_eos" / "__init__.pyi").read_text())
    return {
        alias.asname or alias.name: f"kafka_share_eos.{node.module}"
        for node in tree.body if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
    }


def test_the_top_names_are_the_objects_of_their_deep_paths() -> None:
    table = _export_table()

    for name, module in table.items():
        assert getattr(kafka_share_eos, name) is getattr(importlib.import_module(module), name)
    assert set(kafka_share_eos.__all__) == {*table, "__version__"}


def test_importing_the_package_loads_none_of_its_modules() -> None:
    # The stub's table is all type checkers see, and every name in it loads on first use.
    script = ("import sys, kafka_share_eos; "
              "print(sorted(m for m in sys.modules if m.startswith('kafka_share_eos.')))")
    loaded = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True).stdout.strip()
    assert loaded == "[]"
    assert not (ROOT / "kafka_share_eos" / "__init__.py").read_text().count("TYPE_CHECKING")


# Plain records and interfaces: building one cannot be refused.
NOTHING_TO_RAISE = {
    "BatchReport", "CommitResult", "DeadLetterSink", "DecisionLog", "Participant", "RecoveryReport",
    "Token", "Transaction",
}


def test_public_constructors_factories_and_entry_points_say_what_they_raise() -> None:
    from kafka_share_eos.strategies import BatchStrategy

    public = {name: getattr(kafka_share_eos, name) for name in kafka_share_eos.__all__}
    constructors = [
        value for name, value in public.items()
        if inspect.isclass(value) and not issubclass(value, BaseException)
        and name not in NOTHING_TO_RAISE
    ]
    documented = {
        value.__qualname__: f"{value.__doc__}{value.__init__.__doc__}" for value in constructors
    }
    entry_points = [
        kafka_share_eos.IdempotentUpsertSink.sql, kafka_share_eos.IdempotentUpsertSink.delta,
        kafka_share_eos.RecordIdentity.of, kafka_share_eos.TopicSpec.parse,
        kafka_share_eos.EmbeddedBroker.start, BatchStrategy.apply, BatchStrategy.__call__,
        *(value for value in public.values() if inspect.isfunction(value)),
    ]
    documented.update((f.__qualname__, str(f.__doc__)) for f in entry_points)

    silent = sorted(name for name, doc in documented.items() if "Raises:" not in doc)
    assert not silent, f"say what these raise (a Raises: section): {silent}"
    assert {"IdempotentUpsertSink", "PostgresParticipant", "open_dead_letters"} <= set(documented)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'IdempotentUpsert'"):
        kafka_share_eos.IdempotentUpsert  # noqa: B018


def _toolkit_names() -> set[str]:
    """Names of the classes defined in the toolkit's modules (CLI, benchmarks and the testing
    helpers aside)."""
    modules = set(PUBLIC)
    for package in PUBLIC:
        path = importlib.import_module(package).__path__
        modules.update(m.name for m in pkgutil.walk_packages(path, package + "."))
    names = set()
    for name in modules:
        if name.startswith(("kafka_share_eos.cli", "kafka_share_eos.proving_ground.bench",
                            TESTING)):
            continue
        for value in vars(importlib.import_module(name)).values():
            if inspect.isclass(value) and value.__module__ == name:
                names.add(value.__name__)
    return names
