"""A Spark home whose Python workers import the installed PySpark, not Spark's zip of it.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` first on its Python workers' path, and Python
compiles every module it imports from a zip anew in each process. A Spark Connect server starts
a fresh ``foreachBatch`` worker for each query and waits a fixed 10 s (Spark's
``PythonWorkerFactory``) for it to connect back; importing PySpark's Connect client from the zip
took 9 to 13 s of that on a loaded 2-core machine, and the query's start failed with "Python
worker failed to connect back". A home of links to the installation's own folders, without its
``python`` folder, leaves the workers the interpreter's installed PySpark: the same release,
compiled once.
"""

from __future__ import annotations

from pathlib import Path

WITHHELD = "python"
"""The folder of the installation the linked home leaves out: it holds ``lib/pyspark.zip``."""


def linked_spark_home(home: Path, into: Path) -> Path:
    """``into``, made a Spark home of links to everything in ``home`` but its
    :data:`WITHHELD` folder (links already there are kept)."""
    into.mkdir(parents=True, exist_ok=True)
    for entry in home.iterdir():
        link = into / entry.name
        if entry.name != WITHHELD and not link.is_symlink():
            link.symlink_to(entry)
    return into
