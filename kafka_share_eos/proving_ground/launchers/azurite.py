"""Azurite, Microsoft's Azure Blob Storage emulator, on loopback for tests.

A pipeline whose journal, Delta tables and checkpoints live on Azure Blob relies on the service's
first-writer-wins creation (``If-None-Match: *`` answered with 409 when the blob exists): the
emulator implements it, so tests can prove that guarantee without an Azure account.

Azurite is an npm package: it is fetched once with ``npm`` into
``$XDG_CACHE_HOME/kafka-share-eos/azurite-<version>`` (``~/.cache`` by default, outside any
repository; :mod:`~kafka_share_eos.proving_ground.launchers.local_server` keeps it and runs it).
The server runs on a free port of 127.0.0.1 with its blobs in a temporary directory removed at
stop.

Version pinned: :data:`AZURITE_VERSION`. Its package asks for Node 22, yet its blob service runs
on Node 20 too; 3.35.0, the last release that asks only for Node 10, breaks delta-rs: from the
third commit on a table, every write fails with "Invalid table version".
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import shutil
import urllib.error
import urllib.request
from email.utils import formatdate
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

if TYPE_CHECKING:
    from obstore.store import AzureStore

AZURITE_VERSION = "3.37.0"
"""The Azurite release the launcher runs unless told otherwise."""

AZURITE_VERSION_ENV = "KSE_AZURITE_VERSION"
"""Environment variable that picks another Azurite release."""

ACCOUNT = "devstoreaccount1"
"""The emulator's one storage account."""

ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
"""The emulator's account key, the same for every installation (Microsoft publishes it)."""

FETCH_TIMEOUT_S = 900.0
START_TIMEOUT_S = 60.0
_API_VERSION = "2021-08-06"


_AZURITE = CachedProgram("azurite", AZURITE_VERSION, AZURITE_VERSION_ENV)

azurite_version = _AZURITE.version
"""The Azurite release to run: ``KSE_AZURITE_VERSION`` or :data:`AZURITE_VERSION`."""

cache_dir = _AZURITE.directory
"""Where an Azurite release is (or will be) installed."""


def azurite_blob(version: str | None = None) -> Path:
    """The blob service's entry script of Azurite ``version`` (default
    :func:`azurite_version`), fetched with npm if missing.

    Raises:
        ObjectStoreServerError: ``node`` or ``npm`` is missing, or the fetch failed.
    """
    return _entry_script(_AZURITE.fetched(version, _fetch))


def _entry_script(target: Path) -> Path:
    return target / "node_modules" / "azurite" / "dist" / "src" / "blob" / "main.js"


def _fetch(version: str, target: Path) -> None:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise ObjectStoreServerError(
            f"fetching Azurite {version} needs Node.js and npm on PATH: install them "
            "(e.g. apt install nodejs npm)"
        )
    local_server.notice(f"fetching Azurite {version} with npm into {target}")
    shutil.rmtree(target / "node_modules", ignore_errors=True)
    command = [npm, "install", "--prefix", str(target), "--no-save", "--no-audit", "--no-fund",
               "--omit=dev", "--loglevel=error", f"azurite@{version}"]
    step = f"fetching Azurite {version} with npm"
    outcome = local_server.run_tool(command, what=step, timeout_s=FETCH_TIMEOUT_S)
    if outcome.returncode != 0 or not _entry_script(target).exists():
        reason = (outcome.stderr or outcome.stdout).strip().splitlines()
        raise ObjectStoreServerError(
            f"{step} failed: {reason[-1] if reason else f'exit code {outcome.returncode}'}"
        )


class AzuriteServer(LocalServer):
    """Azurite's blob service on a free port of 127.0.0.1, with one container created: a
    context manager (``with AzuriteServer() as azure:``) whose :meth:`url` and
    :meth:`storage_options` serve deltalake and :meth:`obstore_store` obstore.

    Args:
        container: the container created at start (3 to 63 lowercase letters, digits, dashes).
        version: the Azurite release (default :func:`azurite_version`).
    """

    def __init__(self, container: str = "kse", *, version: str | None = None) -> None:
        super().__init__("Azurite", _AZURITE, version, ports=1, client_port=0,
                         port_taken=("EADDRINUSE",), start_timeout_s=START_TIMEOUT_S,
                         awaited="answer")
        self.container = container

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint, ``http://127.0.0.1:<port>/devstoreaccount1``."""
        return f"http://127.0.0.1:{self._running_port()}/{ACCOUNT}"

    def url(self, path: str = "") -> str:
        """``az://<container>/<path>``, the URL deltalake and obstore take with
        :meth:`storage_options`."""
        return f"az://{self.container}/{path.lstrip('/')}"

    def storage_options(self) -> dict[str, str]:
        """Options for ``deltalake`` (``storage_options=``) to reach the container (obstore
        takes :meth:`obstore_store` instead: it keeps ``allow_http`` among its client options).

        Azure Blob refuses a second creation of a blob by itself, so Delta commits need no
        further option to be safe against concurrent writers."""
        return {"azure_storage_account_name": ACCOUNT, "azure_storage_account_key": ACCOUNT_KEY,
                "azure_storage_endpoint": self.endpoint, "azure_allow_http": "true"}

    def environment(self) -> dict[str, str]:
        """Environment variables that point Azure clients here: object_store's (deltalake,
        obstore) and the Azure SDKs' connection string."""
        connection = (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};"
                      f"AccountKey={ACCOUNT_KEY};BlobEndpoint={self.endpoint};")
        return {"AZURE_STORAGE_ACCOUNT_NAME": ACCOUNT, "AZURE_STORAGE_ACCOUNT_KEY": ACCOUNT_KEY,
                "AZURE_STORAGE_ENDPOINT": self.endpoint, "AZURE_ALLOW_HTTP": "true",
                "AZURE_STORAGE_CONNECTION_STRING": connection}

    def obstore_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``obstore.store.AzureStore`` for the container
        (JSON-serialisable, for a child process)."""
        return {"container_name": self.container, "account_name": ACCOUNT,
                "access_key": ACCOUNT_KEY, "endpoint": self.endpoint,
                "client_options": {"allow_http": True}}

    def obstore_store(self) -> AzureStore:
        """An obstore store on the container (obstore must be installed)."""
        from obstore.store import AzureStore

        return AzureStore(**self.obstore_kwargs())

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        script = azurite_blob(self.version)
        node = shutil.which("node")
        if node is None:
            raise ObjectStoreServerError("Azurite needs Node.js and no 'node' is on PATH")
        return [node, str(script)]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], None]:
        (work / "blobs").mkdir(exist_ok=True)
        return [*program, "--blobHost", "127.0.0.1", "--blobPort", str(ports[0]),
                "--location", str(work / "blobs"), "--skipApiVersionCheck", "--loose",
                "--disableTelemetry", "--silent"], None

    def _ready(self, port: int) -> bool:
        endpoint = f"http://127.0.0.1:{port}/{ACCOUNT}"
        if not _answers(f"{endpoint}?comp=list"):
            return False
        self._create_container(endpoint)
        return True

    def _create_container(self, endpoint: str) -> None:
        """Create the container with a request signed by the account key (Shared Key)."""
        headers = {"x-ms-date": formatdate(usegmt=True), "x-ms-version": _API_VERSION}
        canonical = "".join(f"{name}:{value}\n" for name, value in sorted(headers.items()))
        resource = f"/{ACCOUNT}/{ACCOUNT}/{self.container}\nrestype:container"
        signed = "PUT\n" + "\n" * 11 + canonical + resource
        digest = hmac.new(base64.b64decode(ACCOUNT_KEY), signed.encode(), hashlib.sha256).digest()
        request = urllib.request.Request(
            f"{endpoint}/{self.container}?restype=container", method="PUT",
            headers={**headers, "Content-Length": "0",
                     "Authorization": f"SharedKey {ACCOUNT}:{base64.b64encode(digest).decode()}"},
        )
        try:
            urllib.request.urlopen(request, timeout=30).close()
        except urllib.error.HTTPError as error:
            raise ObjectStoreServerError(
                f"Azurite refused to create container {self.container!r}: {error.code} "
                f"{error.read().decode(errors='replace')[:500]}"
            ) from None


def _answers(url: str) -> bool:
    """Whether an HTTP server answers at ``url``, whatever its status."""
    try:
        urllib.request.urlopen(url, timeout=2).close()
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False
    return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.azurite``: fetch Azurite now (the
    test command does, so that a failed fetch fails it at once with npm's reason); silent when it
    is there."""
    local_server.prefetch(azurite_blob)


if __name__ == "__main__":
    main()
