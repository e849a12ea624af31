"""The package's shape, kept (docs/development.md, "Layers"): the layers hold, entry points stay
readable, module names do not mislead, and the docs' index lists every command."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import typer

from kafka_share_eos.cli.main import app

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "kafka_share_eos"
PROVING_GROUND = PACKAGE / "proving_ground"
LONGEST_FUNCTION = 80
# One module per backend inside a concept's folder (twophase/postgres.py is the Postgres
# participant, launchers/postgres.py starts a server): the folder says which concept it serves.
# The runtime and the proving ground each keep their errors in one module of that name.
BACKEND_NAMES = {"delta", "iceberg", "postgres", "sql", "kafka", "spark", "errors"}
# A command's module and a benchmark's carry the name of the command or benchmark they are.
NAMED_AFTER_WHAT_THEY_RUN = (PACKAGE / "cli", PROVING_GROUND / "bench")


def _modules(*, proving_ground: bool) -> list[Path]:
    runtime = [p for p in PACKAGE.rglob("*.py")
               if "strategies" not in p.relative_to(PACKAGE).parts
               and not p.is_relative_to(PROVING_GROUND)]
    runtime += list((ROOT / "strategies").glob("*.py"))
    return sorted(runtime + (list(PROVING_GROUND.rglob("*.py")) if proving_ground else []))


def test_the_runtime_never_imports_the_proving_ground_or_the_command_line() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_function_of_the_runtime_or_the_command_line_is_over_80_lines() -> None:
    long = []
    for path in _modules(proving_ground=False):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > LONGEST_FUNCTION:
                    long.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({lines})")
    assert not long


def test_no_two_modules_share_a_name_unless_each_serves_one_backend() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    for path in _modules(proving_ground=True):
        named_for_itself = path.parent not in NAMED_AFTER_WHAT_THEY_RUN
        if path.stem not in {"__init__", "__main__"} and named_for_itself:
            by_name[path.stem].append(str(path.relative_to(ROOT)))
    for package in PACKAGE.iterdir():
        if package.is_dir() and (package / "__init__.py").exists():
            by_name[package.name].append(f"{package.relative_to(ROOT)}/")
    shared = {name: places for name, places in by_name.items()
              if len(places) > 1 and name not in BACKEND_NAMES}
    assert not shared

TESTS = ROOT / "tests"


def _runtime_folders() -> list[Path]:
    """The runtime's folders: the package's root, its runtime packages and ``strategies/``."""
    packages = [path for path in PACKAGE.iterdir() if (path / "__init__.py").exists()
                and path.name not in {"cli", "proving_ground", "strategies"}]
    return [PACKAGE, *sorted(packages), ROOT / "strategies"]


def _tests_of(folder: Path) -> Path:
    """Where the tests of the modules of ``folder`` are: tests/ mirrors the package."""
    return TESTS if folder == PACKAGE else TESTS / folder.name


def _named(module: Path) -> str:
    # A private module's tests drop the underscore: tests/test_libs.py tests _libs.py.
    return module.stem.lstrip("_")


def test_every_runtime_module_has_a_test_file_named_for_it() -> None:
    missing = [
        str((_tests_of(folder) / f"test_{_named(module)}.py").relative_to(ROOT))
        for folder in _runtime_folders()
        for module in sorted(folder.glob("*.py")) if module.stem != "__init__"
        and not (_tests_of(folder) / f"test_{_named(module)}.py").exists()
    ]
    assert not missing


def test_every_test_file_of_a_runtime_folder_is_named_for_one_of_its_modules() -> None:
    # tests/<folder>/test_<module>.py, or test_<module>_<aspect>.py for a part of it worth a
    # file of its own: where a module's tests are is never a question.
    stray = []
    for folder in _runtime_folders():
        modules = {_named(module) for module in folder.glob("*.py") if module.stem != "__init__"}
        for test in sorted(_tests_of(folder).glob("test_*.py")):
            name = test.stem.removeprefix("test_")
            if not any(name == module or name.startswith(f"{module}_") for module in modules):
                stray.append(str(test.relative_to(ROOT)))
    assert not stray


def test_the_docs_index_lists_every_command() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    listed = set(re.findall(r"^\| `([a-z-]+)` \|", index, flags=re.MULTILINE))
    commands = {info.name for info in app.registered_commands}
    commands |= {info.name for info in app.registered_groups}
    assert None not in commands
    assert commands == listed, typer.style(f"docs/index.md lists {sorted(listed)}")


def test_every_launcher_builds_on_the_one_base() -> None:
    # docs/development.md, "Real components in tests": a launcher implements Launcher's hooks
    # and inherits start, stop and the context manager, so every one cleans up the same way.
    import importlib
    import inspect

    from kafka_share_eos.proving_ground.launchers.lifecycle import Launcher

    folders = [PROVING_GROUND / "launchers", PROVING_GROUND / "broker"]
    checked, wrong = [], []
    for path in sorted(path for folder in folders for path in folder.glob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for cls in vars(importlib.import_module(module)).values():
            if not inspect.isclass(cls) or cls.__module__ != module or cls is Launcher:
                continue
            # What starts and stops, or is a context manager, is a launcher.
            starts_and_stops = hasattr(cls, "start") and hasattr(cls, "stop")
            if not (starts_and_stops or hasattr(cls, "__enter__")):
                continue
            checked.append(cls.__name__)
            if not issubclass(cls, Launcher):
                wrong.append(f"{module}.{cls.__name__} does not derive from Launcher")
            for method in sorted({"__enter__", "__exit__"} & set(vars(cls))):
                wrong.append(f"{module}.{cls.__name__} defines its own {method}")
    assert {"EmbeddedBroker", "KafkaCluster", "LocalServer", "Toxiproxy"} <= set(checked)
    assert not wrong


# A Spark Connect session has no JVM on the client side (docs/development.md), so nothing of
# the runtime may reach for one where such a session could be the caller. Each place that may,
# and why it never runs for a Connect session.
JVM_ONLY = {"sparkContext", "SparkContext", "_jvm", "_jdf", "_jsc", "_jsparkSession", "rdd"}
JVM_USE_ALLOWED = {
    ("strategies/streaming_query.py", "sparkContext"): "only for a session that is not Connect",
    ("kafka_share_eos/monitoring/progress_listener.py", "SparkContext"):
        "the Py4J listener of a classic session; a Connect session gets the client's listener",
    ("kafka_share_eos/monitoring/progress_listener.py", "_jvm"): "the same",
}


def test_nothing_in_the_runtime_reaches_for_a_jvm_a_connect_session_lacks() -> None:
    found = set()
    for path in _modules(proving_ground=False):
        for node in ast.walk(ast.parse(path.read_text())):
            name = (node.attr if isinstance(node, ast.Attribute)
                    else node.id if isinstance(node, ast.Name)
                    else None)
            names = [alias.name for alias in node.names] if isinstance(node, ast.ImportFrom) else []
            for used in ([name] if name else []) + names:
                if used in JVM_ONLY:
                    found.add((str(path.relative_to(ROOT)), used))
    assert found - set(JVM_USE_ALLOWED) == set()
    assert set(JVM_USE_ALLOWED) <= found  # the scan finds each allowed use
