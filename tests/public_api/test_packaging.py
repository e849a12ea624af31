"""The source distribution builds the wheel, both pass twine's checks, and the wheel ships every
module (``strategies/`` as ``kafka_share_eos.strategies``), the type marker and the entry points,
and imports on its own; the editable install maps the same; installed with two extras in a clean
virtual environment, the wheel runs docs/getting-started.md's pipeline as written."""

from __future__ import annotations

import ast
import configparser
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.doc_blocks import ToTestResources, python_blocks

from kafka_share_eos import EmbeddedBroker

pytestmark = pytest.mark.timeout(300)

REPO = Path(__file__).resolve().parents[2]
# Source directories and the package each one ships as (pyproject's package-dir mapping).
PACKAGE_DIRS = {"kafka_share_eos": "kafka_share_eos", "strategies": "kafka_share_eos/strategies"}

# The editable install maps strategies/ from outside the package directory, so walking
# kafka_share_eos alone would not find it there.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
names = {"kafka_share_eos", "kafka_share_eos.strategies"}
for package in sorted(names):
    path = importlib.import_module(package).__path__
    names.update(m.name for m in pkgutil.walk_packages(path, package + "."))
files = {name: importlib.import_module(name).__file__ for name in sorted(names)}
print(json.dumps({"files": files, "path": sys.path}))
"""


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The source distribution and the wheel built from it (as ``python -m build`` makes them,
    the wheel from the unpacked sdist, which proves the sdist complete), from a copy of the
    sources, so the build leaves nothing in the repository."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    for directory in PACKAGE_DIRS:
        shutil.copytree(REPO / directory, source / directory,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    dist = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        capture_output=True, text=True, timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return dist


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("kafka_share_eos-*.whl")
    return built


def test_both_distributions_pass_twines_strict_check(dist: Path) -> None:
    built = sorted(dist.iterdir())
    assert sorted(path.suffix for path in built) == [".gz", ".whl"]
    result = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, built)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


def _source_modules() -> set[str]:
    shipped = set()
    for directory, package in PACKAGE_DIRS.items():
        for path in (REPO / directory).rglob("*.py"):
            relative = path.relative_to(REPO / directory)
            if relative.parts[0] == "strategies" and directory == "kafka_share_eos":
                continue  # strategies/ at the top level is the real source of that package
            shipped.add(f"{package}/{relative.as_posix()}")
    return shipped


def test_wheel_contains_every_module_the_type_marker_and_entry_points(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (entry_points_file,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = configparser.ConfigParser()
        entry_points.read_string(archive.read(entry_points_file).decode())

    assert "kafka_share_eos/strategies/__init__.py" in names
    assert "kafka_share_eos/py.typed" in names
    missing = _source_modules() - names
    assert not missing, f"modules missing from the wheel: {sorted(missing)}"
    assert not any(n.startswith(("strategies/", "tests/")) for n in names)
    assert entry_points["console_scripts"]["kafka-share-eos"] == "kafka_share_eos.cli.main:run"
    assert entry_points["pytest11"]["kafka_share_eos"] == (
        "kafka_share_eos.proving_ground.pytest_plugin")


def _import_everything(
    cwd: Path, *, pythonpath: list[Path] | None
) -> tuple[dict[str, str], list[str]]:
    """Import every module in a fresh interpreter; return their files and its ``sys.path``."""
    command = [sys.executable, "-c", IMPORT_ALL]
    env = {"PATH": "/usr/bin:/bin"}
    if pythonpath is not None:
        # -S keeps site-packages' .pth hooks (the editable install) out; the dependencies
        # come from plain site-packages placed after the unpacked wheel.
        command.insert(1, "-S")
        env["PYTHONPATH"] = ":".join(str(p) for p in pythonpath)
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env,
                            timeout=120)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    return loaded["files"], loaded["path"]


def test_every_module_imports_from_the_unpacked_wheel(wheel: Path, tmp_path: Path) -> None:
    unpacked = tmp_path / "unpacked"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(unpacked)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    files, path = _import_everything(
        elsewhere, pythonpath=[unpacked, Path(sysconfig.get_paths()["purelib"])]
    )

    assert files["kafka_share_eos.strategies"] == str(
        unpacked / "kafka_share_eos" / "strategies" / "__init__.py"
    )
    outside = {name: f for name, f in files.items() if not f.startswith(f"{unpacked}/")}
    assert not outside, f"modules not loaded from the wheel: {outside}"
    assert str(REPO) not in path


def test_editable_install_maps_strategies(tmp_path: Path) -> None:
    files, _ = _import_everything(tmp_path, pythonpath=None)

    # kafka_share_eos/strategies links to strategies/, so that the tree shows the package as it
    # ships (type checkers read it so): the module may be reached through the link.
    strategies = Path(files["kafka_share_eos.strategies"]).resolve()
    assert strategies == REPO / "strategies" / "__init__.py"
    assert files["kafka_share_eos"] == str(REPO / "kafka_share_eos" / "__init__.py")


def _getting_started_pipeline(broker: EmbeddedBroker, postgres_url: str, root: Path) -> str:
    """docs/getting-started.md's pipeline, pointed at ``broker``, ``postgres_url`` and ``root``."""
    (block,) = [b for b in python_blocks() if b.name == "getting-started.md#1"]
    tree = ToTestResources(broker.bootstrap_servers, postgres_url, root).visit(
        ast.parse(block.code))
    return ast.unparse(ast.fix_missing_locations(tree))


@pytest.mark.timeout(900)
def test_the_wheel_in_a_clean_venv_runs_the_getting_started_pipeline(
    wheel: Path, tmp_path: Path, postgres_url: str
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         f"{wheel}[spark,postgres]"],
        capture_output=True, text=True, timeout=600,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    values = [b"event-%d" % n for n in range(12)]
    with EmbeddedBroker() as broker:
        broker.create_topic("events", 2)
        produce(broker.bootstrap_servers, "events", values, partitions=2)
        script = tmp_path / "pipeline.py"
        script.write_text(_getting_started_pipeline(broker, postgres_url, tmp_path))
        # Only the clean venv: no PYSPARK_PYTHON and no project interpreter on PATH.
        env = {key: value for key, value in os.environ.items()
               if key not in {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV",
                              "PYTHONPATH", "SPARK_HOME"}}
        env["PATH"] = os.pathsep.join(
            part for part in env["PATH"].split(os.pathsep)
            if not part.startswith(str(Path(sys.executable).parent)))
        ran = subprocess.run([str(venv / "bin" / "python"), str(script)], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=240)
    assert ran.returncode == 0, ran.stderr[-3000:]

    engine = sa.create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text('SELECT "partition", "offset", value FROM events')).all()
    engine.dispose()
    assert len({(r[0], r[1]) for r in rows}) == len(rows) == len(values)
    assert sorted(bytes(r[2]) for r in rows) == sorted(values)
