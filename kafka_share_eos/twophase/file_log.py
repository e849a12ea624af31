"""A decision log made of one small JSON file per decision, on any ``pyarrow.fs`` filesystem.

Put it next to the Spark checkpoint (local disk, HDFS, S3, GCS, ...): the decision then lives and
dies with the query's other durable state.
"""

from __future__ import annotations

from pyarrow import fs

from kafka_share_eos.storage import delete_if_present, open_location, write_atomically
from kafka_share_eos.twophase.protocol import Decision

_SUFFIX = ".json"


def _file_name(txid: str) -> str:
    # ':' is awkward in file names on some stores; transaction ids never contain '='.
    return txid.replace(":", "=") + _SUFFIX


def _txid(file_name: str) -> str:
    return file_name[: -len(_SUFFIX)].replace("=", ":")


class FileDecisionLog:
    """Stores each decision as ``<directory>/<txid>.json``, written atomically.

    Each file is written under a temporary name and then renamed, so a reader sees a whole
    decision or none.

    Args:
        uri: a directory URI or local path (``/ckpt/twophase``, ``s3://bucket/ckpt/twophase``).

    Raises:
        OSError: the directory cannot be created there (pyarrow's filesystem error, as is).
    """

    def __init__(self, uri: str) -> None:
        self._fs, self._dir = open_location(uri, create=True)

    def write(self, decision: Decision) -> None:
        """Store ``decision`` (a transaction id is decided once, by one coordinator)."""
        path = f"{self._dir}/{_file_name(decision.txid)}"
        write_atomically(self._fs, path, decision.to_json_text().encode())

    def read(self, txid: str) -> Decision | None:
        """The decision stored for ``txid``, if any."""
        path = f"{self._dir}/{_file_name(txid)}"
        try:
            with self._fs.open_input_stream(path) as stream:
                return Decision.from_json_text(stream.read().decode())
        except FileNotFoundError:
            return None

    def delete(self, txid: str) -> None:
        """Forget a resolved decision."""
        delete_if_present(self._fs, f"{self._dir}/{_file_name(txid)}")

    def txids(self, prefix: str) -> list[str]:
        """Transaction ids with a stored decision that start with ``prefix``."""
        infos = self._fs.get_file_info(fs.FileSelector(self._dir, allow_not_found=True))
        names = (info.base_name for info in infos if info.type == fs.FileType.File)
        return sorted(
            txid
            for txid in (_txid(n) for n in names if n.endswith(_SUFFIX) and not n.startswith("."))
            if txid.startswith(prefix)
        )
