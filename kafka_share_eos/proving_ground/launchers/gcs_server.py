"""fake-gcs-server, a Google Cloud Storage emulator, on loopback for tests.

fake-gcs-server (BSD-2-Clause) publishes no package to a registry the suite uses but the Go
module proxy: :func:`fake_gcs_server_binary` builds it once with ``go install`` into
``$XDG_CACHE_HOME/kafka-share-eos/fake-gcs-server-<version>`` (``~/.cache`` by default, outside
any repository; about a minute and a half of Go's time). The server keeps its objects in a
temporary directory removed at stop, and serves one bucket, made from a directory it loads at
start.

What it serves, with v1.56.1: the JSON API whole, its uploads honouring ``ifGenerationMatch=0``
(a second create answered 412), and the XML API's reads (``GET``, ``HEAD``, listing) once its
public host is its own address. It has no XML API ``PUT``, and Rust's ``object_store`` (so obstore
and delta-rs) writes every object, conditional creates included, with one: each of their writes
is answered ``400 invalid uploadType``. A store the toolkit writes to must first create a probe
object first-writer-wins (:func:`~kafka_share_eos.storage.object_store.check_conditional_writes`),
so ``gs://`` locations on this server are refused before any record is written; what the toolkit
only reads (a journal's status) is read there, once :meth:`GcsServer.upload` put it in through the
JSON API.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

if TYPE_CHECKING:
    from obstore.store import GCSStore

FAKE_GCS_SERVER_MODULE = "github.com/fsouza/fake-gcs-server"
FAKE_GCS_SERVER_VERSION = "v1.56.1"
"""The fake-gcs-server release the launcher builds unless told otherwise."""

FAKE_GCS_SERVER_VERSION_ENV = "KSE_FAKE_GCS_SERVER_VERSION"
"""Environment variable that picks another module version of fake-gcs-server."""

BUILD_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0

_FAKE_GCS_SERVER = CachedProgram("fake-gcs-server", FAKE_GCS_SERVER_VERSION,
                                 FAKE_GCS_SERVER_VERSION_ENV)

fake_gcs_server_version = _FAKE_GCS_SERVER.version
"""The fake-gcs-server module version to run: ``KSE_FAKE_GCS_SERVER_VERSION`` or the pinned one."""


def fake_gcs_server_binary(version: str | None = None) -> Path:
    """The ``fake-gcs-server`` binary of ``version`` (default :func:`fake_gcs_server_version`),
    built if missing.

    Raises:
        ObjectStoreServerError: Go is missing, or the download or the build failed.
    """
    return _FAKE_GCS_SERVER.fetched(version, _install) / "fake-gcs-server"


def _install(version: str, target: Path) -> None:
    local_server.go_install(FAKE_GCS_SERVER_MODULE, version, target, name="fake-gcs-server",
                            timeout_s=BUILD_TIMEOUT_S)


class GcsServer(LocalServer):
    """fake-gcs-server on a free port of 127.0.0.1 with one bucket: a context manager
    (``with GcsServer() as gcs:``) whose :meth:`url` and :meth:`storage_options` serve the
    toolkit's locations and deltalake, and :meth:`obstore_store` obstore.

    Args:
        bucket: the bucket it serves from its start.
        version: the fake-gcs-server module version (default :func:`fake_gcs_server_version`).
    """

    def __init__(self, bucket: str = "kse", *, version: str | None = None) -> None:
        super().__init__("fake-gcs-server", _FAKE_GCS_SERVER, version, ports=1, client_port=0,
                         port_taken=("address already in use",),
                         start_timeout_s=START_TIMEOUT_S, awaited=f"serve bucket {bucket!r}")
        self.bucket = bucket

    @property
    def endpoint(self) -> str:
        """The server's base URL, ``http://127.0.0.1:<port>``."""
        return f"http://127.0.0.1:{self._running_port()}"

    def url(self, path: str = "") -> str:
        """``gs://<bucket>/<path>``, the URL the toolkit, deltalake and obstore take with
        :meth:`storage_options`."""
        return f"gs://{self.bucket}/{path.lstrip('/')}"

    def storage_options(self) -> dict[str, str]:
        """Storage options that reach the server: object_store's way to an emulator is a
        service-account key naming the endpoint (``gcs_base_url``) with OAuth turned off, so
        no token is asked of Google's metadata server, and plain HTTP allowed."""
        return {"google_service_account_key": self._service_account_key(),
                "google_allow_http": "true"}

    def obstore_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``obstore.store.GCSStore`` for the bucket
        (JSON-serialisable, for a child process)."""
        return {"bucket": self.bucket, "service_account_key": self._service_account_key(),
                "client_options": {"allow_http": True}}

    def obstore_store(self) -> GCSStore:
        """An obstore store on the bucket (obstore must be installed)."""
        from obstore.store import GCSStore

        return GCSStore(**self.obstore_kwargs())

    def upload(self, key: str, payload: bytes, *, if_absent: bool = False) -> bool:
        """Store ``payload`` at ``key`` through the JSON API, as Google's client libraries
        upload; with ``if_absent`` only when no object is there (``ifGenerationMatch=0``).
        Return whether it was stored (False: ``if_absent`` and the server answered 412).

        Raises:
            ObjectStoreServerError: the server refused the upload otherwise.
        """
        query = urlencode({"uploadType": "media", "name": key,
                           **({"ifGenerationMatch": "0"} if if_absent else {})})
        request = urllib.request.Request(
            f"{self.endpoint}/upload/storage/v1/b/{self.bucket}/o?{query}", data=payload,
            method="POST", headers={"Content-Type": "application/octet-stream"})
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as error:
            if if_absent and error.code == 412:
                return False
            raise ObjectStoreServerError(
                f"fake-gcs-server refused the upload of {key!r}: {error.code} "
                f"{error.read().decode(errors='replace')[:300]}"
            ) from None
        return True

    # -- internals ----------------------------------------------------------------------------

    def _service_account_key(self) -> str:
        return json.dumps({"gcs_base_url": self.endpoint, "disable_oauth": True,
                           "client_email": "", "private_key": "", "private_key_id": ""})

    def _program(self) -> list[str]:
        return [str(fake_gcs_server_binary(self.version))]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], None]:
        # Each directory under -data is a bucket the server creates at start.
        (work / "seed" / self.bucket).mkdir(parents=True)
        address = f"127.0.0.1:{ports[0]}"
        return [*program, "-scheme", "http", "-host", "127.0.0.1", "-port", str(ports[0]),
                # The XML API answers only requests addressed to the public host.
                "-public-host", address, "-external-url", f"http://{address}",
                "-backend", "filesystem", "-filesystem-root", str(work / "objects"),
                "-data", str(work / "seed"), "-log-level", "warn"], None

    def _ready(self, port: int) -> bool:
        try:
            urllib.request.urlopen(
                f"http://127.0.0.1:{port}/storage/v1/b/{self.bucket}", timeout=2).close()
        except urllib.error.HTTPError as error:
            raise ObjectStoreServerError(
                f"fake-gcs-server does not serve bucket {self.bucket!r}: {error.code}"
            ) from None
        except OSError:
            return False
        return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.gcs_server``: build fake-gcs-server
    now (the test command does, so that a failed build fails it at once with Go's reason);
    silent when it is there."""
    local_server.prefetch(fake_gcs_server_binary)


if __name__ == "__main__":
    main()
