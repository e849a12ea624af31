"""A place the toolkit keeps files, with the settings of the store that holds it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow.fs as pafs

from kafka_share_eos.storage.files import open_existing, open_location


@dataclass(frozen=True)
class Location:
    """A local path or store URI, and the store's settings (endpoint, region, credentials),
    kept out of ``repr`` and of every file the toolkit writes.

    It is pickled with the reader that Spark sends to its executors, so their tasks open the
    store with the same settings as the driver.
    """

    uri: str
    options: Mapping[str, str] = field(default_factory=dict, repr=False)

    def __str__(self) -> str:
        return self.uri

    def child(self, name: str) -> Location:
        """The location ``name`` under this one."""
        return Location(f"{self.uri.rstrip('/')}/{name}", self.options)

    def open(self, *, create: bool = False) -> tuple[pafs.FileSystem, str]:
        """The filesystem and root of this location (see
        :func:`~kafka_share_eos.storage.files.open_location`)."""
        return open_location(self.uri, create=create, options=self.options)

    def open_existing(self) -> tuple[pafs.FileSystem, str]:
        """Like :meth:`open`, for inspecting: :class:`LocationNotFoundError` when nothing is
        there (see :func:`~kafka_share_eos.storage.files.open_existing`)."""
        return open_existing(self.uri, self.options)


def as_location(where: str | Location) -> Location:
    """``where`` as a :class:`Location`; a plain string has no store settings (the
    environment's are read)."""
    return where if isinstance(where, Location) else Location(where)
