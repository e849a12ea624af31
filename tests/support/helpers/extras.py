"""Processes in which some optional libraries are not installed.

:func:`without` returns the environment of such a process: a ``sitecustomize`` module on
``PYTHONPATH`` puts a finder first on ``sys.meta_path`` that fails every import of the blocked
libraries, exactly as Python does when they are not installed. Every Python process started
with that environment is affected, Spark's source runner and workers included, since they
inherit it from the driver.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

OPTIONAL = ("pyspark", "deltalake", "pyiceberg", "sqlalchemy", "psycopg")
NO_DELTA = ("deltalake",)
NO_SQL = ("sqlalchemy", "psycopg")
NO_DELTA_NOR_PSYCOPG = ("deltalake", "psycopg")

_VARIABLE = "KSE_TEST_NOT_INSTALLED"
_SITECUSTOMIZE = f'''
import os
import sys


class _NotInstalled:
    def __init__(self, names):
        self.names = names

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, _NotInstalled(set(filter(None, os.environ["{_VARIABLE}"].split(",")))))
'''


def without(blocked: Sequence[str], directory: Path) -> dict[str, str]:
    """The environment of a process where ``blocked`` cannot be imported (files go to
    ``directory``)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    path = os.pathsep.join(filter(None, [str(directory), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path, _VARIABLE: ",".join(blocked)}
