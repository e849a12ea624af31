"""The pyiceberg catalog of a target, given as a catalog or as the configuration that builds one.

Spark pickles strategies into other processes (a Spark Connect server's Python worker, the
executors). A pyiceberg catalog cannot travel: it holds a SQLAlchemy engine or an HTTP session.
So a copy keeps what builds the catalog again (its class, name and properties, as pyiceberg's
own ``load_catalog`` takes them) and builds its own on first use, in whatever process runs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from kafka_share_eos._libs import iceberg_catalog
from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.errors import SinkConfigurationError

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog

DEFAULT_CATALOG_NAME = "default"
"""The catalog's name when a configuration gives none (a SQL catalog files its tables under
its name, so every process must use the same)."""


class IcebergCatalog(ProcessLocal):
    """A pyiceberg catalog, built in each process that uses it.

    Args:
        catalog: a pyiceberg ``Catalog``, or its configuration as ``load_catalog`` takes it
            (``{"type": "sql", "uri": "sqlite:///...", "warehouse": "file:///..."}``; an optional
            ``"name"`` entry names the catalog, ``"default"`` otherwise). A catalog object is
            used as it is in this process; a copy in another process builds
            ``type(catalog)(catalog.name, **catalog.properties)``.

    Raises:
        SinkConfigurationError: ``catalog`` is neither, or a configuration without ``type``
            and ``uri``.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_catalog=nothing, _built=bool)

    def __init__(self, catalog: Catalog | Mapping[str, Any]) -> None:
        self._catalog: Catalog | None = None
        self._built = False
        self._class: type[Catalog] | None = None
        if isinstance(catalog, Mapping):
            properties = {str(key): str(value) for key, value in catalog.items()}
            self.name = properties.pop("name", DEFAULT_CATALOG_NAME)
            if not {"type", "uri"} & set(properties):
                raise SinkConfigurationError(
                    f"an Iceberg catalog configuration needs at least 'type' or 'uri', got "
                    f"{sorted(properties)} (e.g. {{'type': 'sql', 'uri': 'sqlite:///catalog.db', "
                    "'warehouse': 'file:///warehouse'}})"
                )
        elif isinstance(catalog, iceberg_catalog.Catalog):
            self._catalog, self._class = catalog, type(catalog)
            self.name, properties = catalog.name, dict(catalog.properties)
        else:
            raise SinkConfigurationError(
                f"catalog= takes a pyiceberg Catalog or its configuration dict, got "
                f"{type(catalog).__name__}"
            )
        self.properties: dict[str, str] = properties

    def catalog(self) -> Catalog:
        """The catalog, built on first use in this process."""
        if self._catalog is None:
            if self._class is None:
                self._catalog = iceberg_catalog.load_catalog(self.name, **self.properties)
            else:
                self._catalog = self._class(self.name, **self.properties)
            self._built = True
        return self._catalog

    def forget(self) -> None:
        """Drop the catalog built here (its connections close); the next use builds another."""
        if not self._built:
            # A catalog the caller gave stays theirs to close.
            return
        engine = getattr(self._catalog, "engine", None)
        if engine is not None:
            engine.dispose()
        self._catalog, self._built = None, False

    def __getstate__(self) -> dict[str, Any]:
        """What a copy builds its catalog from.

        Raises:
            SinkConfigurationError: the catalog lives in this process's memory only (an
                in-memory SQLite database), so a copy elsewhere would find no table.
        """
        if ":memory:" in self.properties.get("uri", ""):
            raise SinkConfigurationError(
                f"Iceberg catalog {self.name!r} keeps its tables in this process's memory "
                f"({self.properties['uri']}), so a copy of the strategy in another process (a "
                "Spark Connect server, an executor) would find none: give catalog= a "
                "configuration dict of a catalog every process reaches (a SQL catalog on a "
                "SQLite file or a PostgreSQL database)"
            )
        return super().__getstate__()

    def __repr__(self) -> str:
        return f"IcebergCatalog({self.name!r}, type={self.properties.get('type', '?')!r})"
