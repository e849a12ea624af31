"""Programs and jars fetched or built once per version into a cache outside any repository.

The files of one version go to ``$XDG_CACHE_HOME/kafka-share-eos/<name>-<version>`` (``~/.cache``
by default); a marker file says the fetch completed and later calls reuse it. Concurrent callers
(pytest workers) wait for one fetch.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_COMPLETE = ".complete"


@dataclass(frozen=True)
class CachedProgram:
    """A program fetched or built once per version into the cache."""

    name: str
    pinned: str
    """The version run unless :attr:`version_env` names another."""
    version_env: str

    def version(self) -> str:
        """The version to run: the one :attr:`version_env` names, or :attr:`pinned`."""
        return os.environ.get(self.version_env) or self.pinned

    def directory(self, version: str) -> Path:
        """Where ``version`` is (or will be) kept."""
        cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        return cache / "kafka-share-eos" / f"{self.name}-{version}"

    def fetched(self, version: str | None, fetch: Callable[[str, Path], None]) -> Path:
        """The directory of ``version`` (default :meth:`version`), filled by
        ``fetch(version, directory)`` unless an earlier fetch completed."""
        version = version or self.version()
        target = self.directory(version)
        if (target / _COMPLETE).exists():
            return target
        target.mkdir(parents=True, exist_ok=True)
        with open(target / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (target / _COMPLETE).exists():
                fetch(version, target)
                (target / _COMPLETE).write_text(version + "\n")
        return target
