"""Where the verified pipelines keep their durable paths: on local disk, or on an object store
(``--storage s3``: SeaweedFS's S3 gateway; ``--storage abfs``: Azurite, Azure Blob's emulator)
started for the verifier's run.

The store's settings, credentials included, reach each pipeline process through its environment
(``AWS_*``, ``AZURE_*``, which obstore, delta-rs and s3a read) and are never written to a file:
the run's configuration names its paths by URIs alone. The verifier reads the journals back
after a run in a child process given that environment too, since the source's ``storage.*``
options (the in-process way) have no setting for the servers' plain-HTTP endpoints.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers.azurite import AzuriteServer
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server

StorageKind = Literal["local", "s3", "abfs"]
STORAGE_KINDS: tuple[StorageKind, ...] = ("local", "s3", "abfs")
READ_TIMEOUT_S = 120.0


def check_storage(kind: str) -> None:
    """Refuse a storage kind the verifier cannot start a store for.

    Raises:
        ConfigurationError: ``kind`` is none of :data:`STORAGE_KINDS`.
    """
    if kind not in STORAGE_KINDS:
        raise ConfigurationError(
            f"unknown storage {kind!r}; choose from {', '.join(STORAGE_KINDS)}"
        )


@dataclass(frozen=True)
class RunStore:
    """An object store the pipelines of a verifier's run keep their durable paths on."""

    server: S3Server | AzuriteServer

    def root(self, run: str) -> str:
        """The URI, without credentials, under which run ``run`` keeps its paths."""
        return self.server.url(run)

    def environment(self) -> dict[str, str]:
        """The variables that give a pipeline process the store's endpoint and credentials."""
        return self.server.environment()

    def storage_options(self) -> dict[str, str]:
        """The store's settings for deltalake, for the verifier's own reads."""
        return self.server.storage_options()


@contextlib.contextmanager
def run_store(kind: str) -> Iterator[RunStore | None]:
    """The store of ``kind``, started for the duration (None for ``local``)."""
    check_storage(kind)
    if kind == "local":
        yield None
        return
    with S3Server() if kind == "s3" else AzuriteServer() as server:
        yield RunStore(server)


@dataclass(frozen=True)
class JournalSummary:
    """What the verifier reports of one pipeline's journal."""

    consumers: list[dict[str, int]]
    """Records per consumer slot (:attr:`JournalStatus.consumers`)."""
    members: dict[str, int]
    """Records per share-group member (:attr:`JournalStatus.members`)."""


def read_journals(
    journals: Mapping[str, str], store: RunStore | None
) -> dict[str, JournalSummary]:
    """The summary of each journal in ``journals`` (by pipeline name); a pipeline that wrote
    none has an empty one."""
    if store is None:
        return _summaries(journals)
    # The child lives only for this read, so the store's settings stay out of this process.
    outcome = subprocess.run(
        [sys.executable, "-m", __name__, json.dumps(dict(journals))],
        capture_output=True, text=True, timeout=READ_TIMEOUT_S, check=False,
        # The server's own endpoint: a fault front before it is for the pipelines only.
        env={**os.environ, **store.server.environment()},
    )
    if outcome.returncode != 0:
        raise ObjectStoreServerError(
            f"reading the journals on {store.root('')} failed: {outcome.stderr[-2000:]}"
        )
    return {name: JournalSummary(**summary)
            for name, summary in json.loads(outcome.stdout).items()}


def _summaries(journals: Mapping[str, str]) -> dict[str, JournalSummary]:
    summaries = {}
    for name, location in journals.items():
        try:
            status = journal_status(location)
        except FileNotFoundError:
            summaries[name] = JournalSummary([], {})
        else:
            summaries[name] = JournalSummary(status.consumers, status.members)
    return summaries


def main(arguments: list[str]) -> None:
    """``python -m kafka_share_eos.proving_ground.verify.run_store JOURNALS``: print the
    summaries of ``JOURNALS`` (JSON, pipeline name to location) as JSON."""
    summaries: dict[str, Any] = {
        name: {"consumers": summary.consumers, "members": summary.members}
        for name, summary in _summaries(json.loads(arguments[0])).items()
    }
    print(json.dumps(summaries))


if __name__ == "__main__":
    main(sys.argv[1:])
