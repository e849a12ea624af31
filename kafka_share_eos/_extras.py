"""Optional dependencies: one object per extra, and the one place their libraries are imported.

pyproject.toml's extras install ``spark`` -> pyspark, ``connect`` -> pyspark and what a Spark
Connect client needs (grpcio, grpcio-status, googleapis-common-protos, pandas, zstandard),
``delta`` -> deltalake, ``iceberg`` -> pyiceberg, ``delta-spark`` -> delta-spark (module
``delta``), ``sqlite`` -> SQLAlchemy, ``postgres`` -> SQLAlchemy and psycopg, ``metrics`` ->
prometheus-client (module ``prometheus_client``), ``broker-dlq`` -> kafka-python (module
``kafka``), ``charts`` -> matplotlib (the proving ground's charts, never a pipeline).
:mod:`kafka_share_eos._libs` holds each library as a module that loads on first use
(:meth:`Extra.lazy`); the toolkit's modules import it from there at their top and use it by
attribute (``sa.text(...)``, ``deltalake.write_deltalake(...)``). So importing the toolkit loads
none of them, whatever is installed, and every constructor or function a user calls checks its
extra with :meth:`Extra.require` first: using a feature whose library is missing raises
:class:`~kafka_share_eos.errors.MissingExtraError` naming the extra to install, never a bare
``ModuleNotFoundError`` from deep inside the toolkit. A module that cannot exist without its
library (a class deriving from pyspark's) imports it inside :meth:`Extra.needed_by` instead.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import Any

from kafka_share_eos.errors import MissingExtraError


@dataclass(frozen=True)
class Extra:
    """An extra of the package and the libraries it installs."""

    name: str
    libraries: tuple[str, ...]

    def _missing_library(self, error: ModuleNotFoundError) -> str | None:
        # A library may be a submodule of a namespace shared with others (``google.rpc``): the
        # missing module is that library, a module inside it, or the namespace above it.
        missing = error.name or ""
        for library in self.libraries:
            if f"{missing}.".startswith(f"{library}.") or library.startswith(f"{missing}."):
                return library
        return None

    def lazy(self, module: str) -> ModuleType:
        """``module`` (one of the extra's libraries, or a submodule), imported on the first
        access to one of its attributes."""
        return _LazyModule(module, self)

    @contextmanager
    def needed_by(self, feature: str) -> Iterator[None]:
        """Import the extra's libraries where ``feature`` cannot exist without them."""
        try:
            yield
        except ModuleNotFoundError as error:
            missing = self._missing_library(error)
            if missing is None:
                # Something else is missing (a dependency of the library itself): installing
                # the extra would not help, so the original error says more.
                raise
            lacking = error.name if error.name and error.name != missing else None
            installed = _installed_version(missing) if lacking else None
            if installed is not None:
                # The library is there but older than the module the feature imports.
                raise MissingExtraError(feature, missing, self.name,
                                        installed=installed, lacking=lacking) from error
            raise MissingExtraError(feature, missing, self.name) from error

    def require(self, feature: str) -> None:
        """Check that the extra's libraries are installed before ``feature`` uses them.

        Raises:
            MissingExtraError: one is not; the message names the extra to install.
        """
        with self.needed_by(feature):
            for library in self.libraries:
                import_module(library)


def _installed_version(library: str) -> str | None:
    """The installed version of ``library``'s distribution, or None when it is not installed."""
    try:
        return version(library.partition(".")[0])
    except PackageNotFoundError:
        return None


SPARK = Extra("spark", ("pyspark",))
# What pyspark's own Connect client checks for before it talks to a server (its
# ``check_dependencies``); ``google.rpc`` is googleapis-common-protos, as ``google`` alone is
# protobuf's namespace too.
CONNECT = Extra("connect", ("pyspark", "pandas", "grpc", "grpc_status", "google.rpc", "zstandard"))
DELTA = Extra("delta", ("deltalake",))
ICEBERG = Extra("iceberg", ("pyiceberg",))
# delta-spark's Python module is ``delta``; it drives pyspark, which it requires.
DELTA_SPARK = Extra("delta-spark", ("delta", "pyspark"))
SQLITE = Extra("sqlite", ("sqlalchemy",))
POSTGRES = Extra("postgres", ("sqlalchemy", "psycopg"))
METRICS = Extra("metrics", ("prometheus_client",))
BROKER_DLQ = Extra("broker-dlq", ("kafka",))
CHARTS = Extra("charts", ("matplotlib",))
# A PostgreSQL URL with another driver than psycopg needs SQLAlchemy (and that driver).
_POSTGRES_OTHER_DRIVER = Extra("postgres", ("sqlalchemy",))


def require_sql(engine: object, feature: str) -> None:
    """Check that what a SQL URL needs is installed: SQLAlchemy, and psycopg for
    ``postgresql+psycopg://`` URLs. An engine object needs no check: it was built already.

    Raises:
        MissingExtraError: one of them is not installed (extra ``sqlite`` or ``postgres``).
    """
    if not isinstance(engine, str):
        return
    backend, _, driver = engine.partition(":")[0].partition("+")
    if backend == "sqlite":
        extra = SQLITE
    else:
        # SQLAlchemy 2.1 reads a URL without a driver with psycopg.
        extra = POSTGRES if backend == "postgresql" and driver in ("psycopg", "") else (
            _POSTGRES_OTHER_DRIVER
        )
    extra.require(feature)


class _LazyModule(ModuleType):
    """A module imported on first attribute access. importlib's own ``LazyLoader`` is not safe
    when two threads touch a module first at once on Python 3.11, which the two-phase
    coordinator's prepares do; ``import_module`` under a lock is."""

    def __init__(self, name: str, extra: Extra) -> None:
        super().__init__(name)
        self._extra = extra
        self._module: ModuleType | None = None
        self._lock = threading.Lock()

    def __getattr__(self, attribute: str) -> Any:
        module = self._module
        if module is None:
            with self._lock, self._extra.needed_by(f"kafka_share_eos (it uses {self.__name__})"):
                module = self._module = import_module(self.__name__)
        return getattr(module, attribute)
