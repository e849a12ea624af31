"""A client-only Python environment with ``pyspark-client``, the pure-Python Spark Connect client.

``pyspark-client`` installs under the module name ``pyspark``, as the full PySpark does, so the two
cannot share an environment. :func:`client_python` builds a virtual environment of its own once per
client release, Python version and set of requirements, under
``$XDG_CACHE_HOME/kafka-share-eos/pyspark-client-<version>-<key>``
(:mod:`~kafka_share_eos.proving_ground.launchers.cache`): ``pyspark-client`` with the toolkit's
core requirements and its ``sqlite`` extra, fetched by pip from the package index. The toolkit
itself is not installed there: :func:`client_environment` puts this checkout's on ``PYTHONPATH``,
so the client runs the code under test.

The environment has no Java and no Spark jars: what runs there is what a user of a managed
Connect service runs.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import kafka_share_eos
from kafka_share_eos.proving_ground.errors import SparkConnectServerError
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram

PYSPARK_CLIENT_VERSION_ENV = "KSE_PYSPARK_CLIENT_VERSION"
"""Environment variable that picks another ``pyspark-client`` release than the pinned one."""

PROGRAM = CachedProgram("pyspark-client", "4.2.0", PYSPARK_CLIENT_VERSION_ENV)
"""The newest ``pyspark-client`` on the package index, and where its environments are kept."""

BUILD_TIMEOUT_S = 900.0
_CLIENT_EXTRAS = {"sqlite"}


def client_requirements() -> list[str]:
    """What the environment installs beside ``pyspark-client``: the toolkit's core
    requirements and those of its ``sqlite`` extra, as its installed metadata names them."""
    requirements = []
    for requirement in metadata.requires("kafka-share-eos") or []:
        spec, _, marker = requirement.partition(";")
        if not marker or any(f'extra == "{extra}"' in marker for extra in _CLIENT_EXTRAS):
            requirements.append(spec.strip())
    return sorted(set(requirements))


def client_python(version: str | None = None) -> Path:
    """The interpreter of the client environment of ``pyspark-client`` ``version`` (default:
    :data:`PROGRAM`'s), built first if missing; concurrent callers wait for one build.

    Raises:
        SparkConnectServerError: pip could not build the environment (its output's end says
            why).
    """
    version = version or PROGRAM.version()
    requirements = client_requirements()
    # Another Python or other requirements need an environment of their own.
    identity = "\n".join([sys.version, *requirements])
    key = f"{version}-py{sys.version_info.major}.{sys.version_info.minor}-" + hashlib.sha256(
        identity.encode()).hexdigest()[:12]
    directory = PROGRAM.fetched(key, lambda _key, target: _build(version, requirements, target))
    return directory / "venv" / "bin" / "python"


def client_environment(python_path: list[Path] | None = None) -> dict[str, str]:
    """This process's environment for a client process, without what makes PySpark in it a
    client of another server, with this checkout's toolkit (and ``python_path``) first on
    ``PYTHONPATH``."""
    root = Path(kafka_share_eos.__file__).resolve().parent.parent
    environment = {key: value for key, value in os.environ.items()
                   if key not in ("SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED",
                                  "SPARK_LOCAL_REMOTE", "SPARK_API_MODE", "PYTHONPATH")}
    environment["PYTHONPATH"] = os.pathsep.join(str(p) for p in [root, *(python_path or [])])
    return environment


def _build(version: str, requirements: list[str], target: Path) -> None:
    venv = target / "venv"
    steps = [
        [sys.executable, "-m", "venv", "--clear", str(venv)],
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", f"pyspark-client=={version}", *requirements],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                                  check=False)
        except subprocess.TimeoutExpired as timeout:
            raise SparkConnectServerError(
                f"building the pyspark-client {version} environment in {venv} took more than "
                f"{BUILD_TIMEOUT_S:.0f} s") from timeout
        if done.returncode != 0:
            raise SparkConnectServerError(
                f"building the pyspark-client {version} environment in {venv} failed: "
                f"{(done.stdout + done.stderr)[-2000:]}")


if __name__ == "__main__":
    print(client_python())
