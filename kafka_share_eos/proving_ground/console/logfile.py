"""Everything a run writes to stderr, in a file: Spark's and the JVM's logs, librdkafka's, Python's.

Spark's JVM, its Python workers and source runner, and librdkafka in this process each log to
file descriptor 2 in their own way (log4j's console appender, a worker's stderr, librdkafka's
default logger). Pointing descriptor 2 at a file while the run lasts catches them all at once,
including the processes started meanwhile: the JVM inherits the file and keeps writing there.
Python's warnings and log records land there too, this toolkit's from INFO on.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import sys
from pathlib import Path
from types import TracebackType
from typing import TextIO

_TOOLKIT_LOGGER = "kafka_share_eos"


class StderrToFile:
    """Descriptor 2 and Python's logging appended to ``path`` while the ``with`` block runs.

    Args:
        path: the log file (created with its directory if missing, appended to otherwise).
        title: written at the top of this run's part of the file.
    """

    def __init__(self, path: Path, title: str) -> None:
        self.path = path
        self.title = title
        self._file: TextIO | None = None
        self._saved_fd: int | None = None
        self._handler: logging.Handler | None = None
        self._toolkit_level = logging.NOTSET

    def __enter__(self) -> TextIO:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        log = self._file = self.path.open("a", buffering=1)
        log.write(f"=== {self.title}, {dt.datetime.now().isoformat(timespec='seconds')} ===\n")
        sys.stderr.flush()
        self._saved_fd = os.dup(2)
        os.dup2(log.fileno(), 2)
        self._handler = logging.StreamHandler(log)
        self._handler.setFormatter(
            logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
        )
        logging.getLogger().addHandler(self._handler)
        toolkit = logging.getLogger(_TOOLKIT_LOGGER)
        self._toolkit_level = toolkit.level
        if toolkit.level == logging.NOTSET:
            toolkit.setLevel(logging.INFO)
        return log

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        logging.getLogger(_TOOLKIT_LOGGER).setLevel(self._toolkit_level)
        if self._handler is not None:
            logging.getLogger().removeHandler(self._handler)
        sys.stderr.flush()
        if self._saved_fd is not None:
            os.dup2(self._saved_fd, 2)
            os.close(self._saved_fd)
            self._saved_fd = None
        if self._file is not None:
            self._file.close()
            self._file = None
