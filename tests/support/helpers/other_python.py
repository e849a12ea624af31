"""A Spark Connect server whose Python workers run another minor version of Python than the
client: PySpark's own ``pyspark.zip`` is all they import before they compare versions."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer


def other_python() -> tuple[str, str]:
    """An interpreter of another minor version than this one (3.10 or later, which PySpark's
    workers can run), from pyenv's versions: its path and its ``major.minor``.

    Raises:
        AssertionError: pyenv has none.
    """
    root = subprocess.run(["pyenv", "root"], capture_output=True, text=True, check=False)
    folder = Path(root.stdout.strip() or Path.home() / ".pyenv") / "versions"
    mine = sys.version_info[1]
    found = {int(python.parent.parent.name.split(".")[1]): python
             for python in folder.glob("3.*/bin/python")}
    # The nearest newer one first: the version a client is most likely to meet.
    for minor in sorted(found, key=lambda minor: (minor < mine, abs(minor - mine))):
        if minor >= 10 and minor != mine:
            return str(found[minor]), f"3.{minor}"
    raise AssertionError(f"no Python 3.10+ other than 3.{mine} in {folder}: install one with "
                         "`pyenv install 3.12`")


class OtherPythonServer(SparkConnectServer):
    """A Spark Connect server whose Python workers run ``python``."""

    def __init__(self, python: str) -> None:
        super().__init__(short_lived=True)
        self.workers_python = python

    def _command(self, port: int) -> tuple[list[str], dict[str, str]]:
        command, environment = super()._command(port)
        # The installation's own home, zip included: the workers' Python has no PySpark of
        # its own to import instead.
        environment.update(SPARK_HOME=str(self._spark_home()), PYSPARK_PYTHON=self.workers_python,
                           PYSPARK_DRIVER_PYTHON=self.workers_python)
        return command, environment
