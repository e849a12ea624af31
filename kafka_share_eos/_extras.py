"""Optional dependencies, loaded when a feature first needs them.

pyproject.toml's extras install ``spark`` -> pyspark, ``delta`` -> deltalake, ``sqlite`` ->
SQLAlchemy, ``postgres`` -> SQLAlchemy and psycopg. No package of the toolkit imports them at
import time; the modules and constructors that need one load it through this module, so a
missing one raises :class:`~kafka_share_eos.errors.MissingExtraError` naming the extra to install
instead of a bare ``ModuleNotFoundError`` from deep inside the toolkit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from importlib import import_module
from types import ModuleType

from kafka_share_eos.errors import MissingExtraError

EXTRA_MODULES: Mapping[str, tuple[str, ...]] = {
    "spark": ("pyspark",),
    "delta": ("deltalake",),
    "sqlite": ("sqlalchemy",),
    "postgres": ("sqlalchemy", "psycopg"),
}


@contextmanager
def needs_extra(extra: str, feature: str) -> Iterator[None]:
    """Turn the block's failure to import one of ``extra``'s libraries into a
    :class:`MissingExtraError`; for the imports at the top of a backend module."""
    try:
        yield
    except ModuleNotFoundError as error:
        missing = (error.name or "").partition(".")[0]
        if missing not in EXTRA_MODULES[extra]:
            # Something else is missing (a dependency of the library itself): installing
            # the extra would not help, so the original error says more.
            raise
        raise MissingExtraError(feature, missing, extra) from error


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module`` (a library of ``extra``).

    Raises:
        MissingExtraError: ``module`` is not installed; the message names ``extra``.
    """
    with needs_extra(extra, feature):
        return import_module(module)


def require_sql(engine: object, feature: str) -> None:
    """Check that what a SQL URL needs is installed: SQLAlchemy, and psycopg for
    ``postgresql+psycopg://`` URLs. An engine object needs no check: it was built already.

    Raises:
        MissingExtraError: one of them is not installed (extra ``sqlite`` or ``postgres``).
    """
    if not isinstance(engine, str):
        return
    backend, _, driver = engine.partition(":")[0].partition("+")
    extra = "sqlite" if backend == "sqlite" else "postgres"
    require("sqlalchemy", extra, feature)
    if backend == "postgresql" and driver == "psycopg":
        require("psycopg", extra, feature)

