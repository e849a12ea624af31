"""A decision log made of one small JSON file per decision, on any ``pyarrow.fs`` filesystem.

Put it next to the Spark checkpoint (local disk, HDFS, S3, GCS, ...): the decision then lives and
dies with the query's other durable state.
"""

from __future__ import annotations

from collections.abc import Mapping

from pyarrow import fs

from kafka_share_eos._process_local import ProcessLocal, nothing
from kafka_share_eos.storage import (
    Location,
    delete_if_present,
    supports_write_if_absent,
    write_atomically,
    write_if_absent,
)
from kafka_share_eos.twophase.protocol import Decision, store_first

_SUFFIX = ".json"


def _file_name(txid: str) -> str:
    # ':' is awkward in file names on some stores; transaction ids never contain '='.
    return txid.replace(":", "=") + _SUFFIX


def _txid(file_name: str) -> str:
    return file_name[: -len(_SUFFIX)].replace("=", ":")


class FileDecisionLog(ProcessLocal):
    """Stores each decision as ``<directory>/<txid>.json``, written atomically.

    Each file is written and fsynced under a temporary name, then published, so a reader sees a
    whole decision or none. On a local or shared POSIX path it is published with a hard link,
    which fails when the transaction already has a decision: the first writer wins even against
    another process (``first_writer_wins``). Other stores cannot refuse a second writer: there a
    decision that is already stored is kept, but two processes deciding the same transaction at
    the same moment could both believe they won, so resolving a live application's transactions
    (``kafka-share-eos twophase recover``) needs a local path, an object store or
    :class:`PostgresDecisionLog`. On an object store a decision is created with a conditional
    put, which only its first writer's succeeds.

    Args:
        uri: a directory URI or local path (``/ckpt/twophase``, ``s3://bucket/ckpt/twophase``).
        storage_options: the object store's settings (endpoint, region, credentials), passed
            to obstore as they are; the environment's are read too.

    Only the location travels with a pickled copy: each process opens the store itself.

    Raises:
        OSError: the directory cannot be created there (pyarrow's filesystem error, as is).
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_opened=nothing)

    def __init__(self, uri: str, storage_options: Mapping[str, str] | None = None) -> None:
        self.uri = uri
        self.location = Location(uri, dict(storage_options or {}))
        self._opened: tuple[fs.FileSystem, str] | None = None
        self._files()  # the directory is created now: a store that refuses it fails here
        self.first_writer_wins = supports_write_if_absent(uri)

    def _files(self) -> tuple[fs.FileSystem, str]:
        """The store and the directory of the decisions, opened (and created) on first use."""
        if self._opened is None:
            self._opened = self.location.open(create=True)
        return self._opened

    def write(self, decision: Decision) -> Decision:
        """Store ``decision`` unless its transaction already has one; return the stored one."""
        store, directory = self._files()
        path = f"{directory}/{_file_name(decision.txid)}"
        payload = decision.to_json_text().encode()

        def create() -> bool:
            if self.first_writer_wins:
                return write_if_absent(store, path, payload)
            if self.read(decision.txid) is not None:
                return False
            write_atomically(store, path, payload)
            return True

        return store_first(decision, create, lambda: self.read(decision.txid))

    def read(self, txid: str) -> Decision | None:
        """The decision stored for ``txid``, if any."""
        store, directory = self._files()
        path = f"{directory}/{_file_name(txid)}"
        try:
            with store.open_input_stream(path) as stream:
                return Decision.from_json_text(stream.read().decode(), where=path)
        except FileNotFoundError:
            return None

    def delete(self, txid: str) -> None:
        """Forget a resolved decision."""
        store, directory = self._files()
        delete_if_present(store, f"{directory}/{_file_name(txid)}")

    def txids(self, prefix: str) -> list[str]:
        """Transaction ids with a stored decision that start with ``prefix``."""
        store, directory = self._files()
        infos = store.get_file_info(fs.FileSelector(directory, allow_not_found=True))
        names = (info.base_name for info in infos if info.type == fs.FileType.File)
        return sorted(
            txid
            for txid in (_txid(n) for n in names if n.endswith(_SUFFIX) and not n.startswith("."))
            if txid.startswith(prefix)
        )
