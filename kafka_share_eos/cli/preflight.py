"""Checks of what a long command was given, made before it starts anything, so that a database
it cannot reach or a path it cannot write ends it at once in a line rather than after minutes
of runs."""

from __future__ import annotations

import json
from pathlib import Path

from kafka_share_eos.cli.errors import given
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError


def database(option: str, url: str | None) -> None:
    """Connect to the database at ``url`` once (nothing when None).

    Raises:
        GivenFailure: it cannot be reached, or ``url`` is no SQLAlchemy URL.
    """
    if url is None:
        return
    from kafka_share_eos._extras import POSTGRES
    from kafka_share_eos._libs import sa

    POSTGRES.require(option)
    with given(option, url):
        engine = sa.create_engine(url, pool_pre_ping=False)
        try:
            with engine.connect():
                pass
        finally:
            engine.dispose()


def directory(option: str, path: Path | None) -> None:
    """Refuse a ``path`` that exists and is no directory (one that does not exist is made).

    Raises:
        GivenFailure: ``path`` is a file.
    """
    if path is not None and path.exists() and not path.is_dir():
        with given(option, str(path)):
            raise LocationNotFoundError(f"{path} is a file, not a directory")


def new_file(option: str, path: Path | None) -> None:
    """Refuse a ``path`` whose directory does not exist.

    Raises:
        GivenFailure: no directory to create ``path`` in.
    """
    if path is not None and not path.parent.is_dir():
        with given(option, str(path)):
            raise LocationNotFoundError(f"no directory {path.parent} to write {path.name} in")


def json_lines(option: str, path: Path | None) -> None:
    """Refuse a ``path`` to append JSON lines to that holds something else.

    Raises:
        GivenFailure: its directory does not exist, or its first line is no JSON object.
    """
    new_file(option, path)
    if path is None or not path.is_file():
        return
    with path.open() as lines:
        first = lines.readline().strip()
    try:
        parsed = json.loads(first) if first else {}
    except ValueError:
        parsed = None
    if not isinstance(parsed, dict):
        with given(option, str(path)):
            raise ConfigurationError(f"{path} holds something other than JSON lines")
