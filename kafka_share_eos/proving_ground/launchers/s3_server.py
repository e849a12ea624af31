"""An S3-compatible server on loopback for tests: SeaweedFS, built once from the Go module proxy.

A pipeline whose journal, Delta tables and checkpoints live on S3 relies on first-writer-wins
creation: ``PutObject`` with ``If-None-Match: *`` answered with 412 when the key exists.
SeaweedFS (Apache-2.0) honours it atomically, so tests can prove the guarantee without AWS.

SeaweedFS publishes no binary to a package registry, and its release tags (``4.53``) are no
semantic versions, so the Go module proxy serves it only under pseudo-versions: the launcher
downloads the pinned one with ``go mod download`` and builds ``weed`` from it once, into
``$XDG_CACHE_HOME/kafka-share-eos/seaweedfs-<version>`` (``~/.cache`` by default, outside any
repository; :mod:`~kafka_share_eos.proving_ground.launchers.local_server` keeps it and runs it).
The build takes minutes (a 160 MB binary).

The server is ``weed mini`` (master, volume, filer and S3 gateway in one process) on free ports
of 127.0.0.1, with its data in a temporary directory removed at stop.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_share_eos.proving_ground.errors import ObjectStoreServerError
from kafka_share_eos.proving_ground.launchers import local_server
from kafka_share_eos.proving_ground.launchers.cache import CachedProgram
from kafka_share_eos.proving_ground.launchers.local_server import LocalServer

if TYPE_CHECKING:
    from obstore.store import S3Store

SEAWEEDFS_MODULE = "github.com/seaweedfs/seaweedfs"
SEAWEEDFS_VERSION = "v0.0.0-20261109003541-7506e5f91cd6"
"""The SeaweedFS commit the launcher builds unless told otherwise (``weed version``: 4.53)."""

SEAWEEDFS_VERSION_ENV = "KSE_SEAWEEDFS_VERSION"
"""Environment variable that picks another module version of SeaweedFS."""

ACCESS_KEY = "kse-access-key"
SECRET_KEY = "kse-secret-key"
REGION = "us-east-1"
BUILD_TIMEOUT_S = 3600.0
START_TIMEOUT_S = 120.0
# weed mini's listeners: each HTTP port with its gRPC port, the admin's included.
_PORT_FLAGS = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc",
               "filer.port", "filer.port.grpc", "s3.port", "s3.port.grpc",
               "admin.port", "admin.port.grpc")

_SEAWEEDFS = CachedProgram("seaweedfs", SEAWEEDFS_VERSION, SEAWEEDFS_VERSION_ENV)

seaweedfs_version = _SEAWEEDFS.version
"""The SeaweedFS module version to run: ``KSE_SEAWEEDFS_VERSION`` or the pinned one."""

cache_dir = _SEAWEEDFS.directory
"""Where the ``weed`` binary of a version is (or will be) kept."""


def weed_binary(version: str | None = None) -> Path:
    """The ``weed`` binary of ``version`` (default :func:`seaweedfs_version`), built if missing.

    Raises:
        ObjectStoreServerError: Go is missing, or the download or the build failed.
    """
    return _SEAWEEDFS.fetched(version, _build) / "weed"


def _build(version: str, target: Path) -> None:
    go = shutil.which("go")
    if go is None:
        raise ObjectStoreServerError(
            f"building SeaweedFS {version} needs Go and no 'go' is on PATH: install it "
            "(https://go.dev/dl or e.g. apt install golang)"
        )
    local_server.notice(f"building SeaweedFS {version} with Go into {target} (minutes, once)")
    # The module's go.mod has replace directives, which `go install module@version` refuses:
    # the build runs inside the downloaded module instead.
    source = json.loads(_go(go, version, "mod", "download", "-json",
                            f"{SEAWEEDFS_MODULE}@{version}", cwd=target))["Dir"]
    partial = target / "weed.partial"
    _go(go, version, "build", "-trimpath", "-ldflags=-s -w", "-o", str(partial), "./weed",
        cwd=Path(source))
    partial.replace(target / "weed")


def _go(go: str, version: str, *arguments: str, cwd: Path) -> str:
    step = f"go {arguments[0]} of SeaweedFS {version}"
    outcome = local_server.run_tool([go, *arguments], what=step, timeout_s=BUILD_TIMEOUT_S, cwd=cwd)
    if outcome.returncode != 0:
        lines = [line for line in outcome.stderr.splitlines()
                 if not line.startswith("go: downloading")]
        raise ObjectStoreServerError(
            f"{step} failed: {chr(10).join(lines[-10:]) or f'exit code {outcome.returncode}'}"
        )
    return outcome.stdout


class S3Server(LocalServer):
    """SeaweedFS's S3 gateway on a free port of 127.0.0.1, with one bucket created: a context
    manager (``with S3Server() as s3:``) whose :meth:`url` and :meth:`storage_options` serve
    deltalake, :meth:`obstore_store` obstore, and :meth:`environment` any process (Spark's s3a
    through :func:`~kafka_share_eos.proving_ground.launchers.hadoop_aws.s3a_spark_config`).

    Args:
        bucket: the bucket created at start.
        version: the SeaweedFS module version (default :func:`seaweedfs_version`).
    """

    def __init__(self, bucket: str = "kse", *, version: str | None = None) -> None:
        super().__init__("SeaweedFS", _SEAWEEDFS, version, ports=len(_PORT_FLAGS),
                         client_port=_PORT_FLAGS.index("s3.port"),
                         port_taken=("not available", "address already in use"),
                         start_timeout_s=START_TIMEOUT_S, awaited=f"create bucket {bucket!r}")
        self.bucket = bucket

    @property
    def endpoint(self) -> str:
        """The S3 endpoint, ``http://127.0.0.1:<port>`` (path-style requests)."""
        return f"http://127.0.0.1:{self._running_port()}"

    def url(self, path: str = "") -> str:
        """``s3://<bucket>/<path>``, the URL deltalake takes with :meth:`storage_options`."""
        return f"s3://{self.bucket}/{path.lstrip('/')}"

    def storage_options(self) -> dict[str, str]:
        """Options for ``deltalake`` (``storage_options=``).

        ``aws_conditional_put: etag`` makes delta-rs commit each version with
        ``If-None-Match: *``, so two writers can never both write one version of the log."""
        return {"aws_endpoint_url": self.endpoint, "aws_access_key_id": ACCESS_KEY,
                "aws_secret_access_key": SECRET_KEY, "aws_region": REGION,
                "aws_allow_http": "true", "aws_conditional_put": "etag"}

    def environment(self) -> dict[str, str]:
        """Environment variables that point S3 clients here: boto3 and the AWS SDKs read the
        endpoint, keys and region; object_store (deltalake, obstore) reads them all."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
                "AWS_DEFAULT_REGION": REGION, "AWS_ALLOW_HTTP": "true",
                "AWS_CONDITIONAL_PUT": "etag"}

    def obstore_kwargs(self) -> dict[str, Any]:
        """The keyword arguments of ``obstore.store.S3Store`` for the bucket (JSON-serialisable,
        for a child process)."""
        return {"bucket": self.bucket, "endpoint": self.endpoint, "access_key_id": ACCESS_KEY,
                "secret_access_key": SECRET_KEY, "region": REGION,
                "conditional_put": "etag", "client_options": {"allow_http": True}}

    def obstore_store(self) -> S3Store:
        """An obstore store on the bucket (obstore must be installed)."""
        from obstore.store import S3Store

        return S3Store(**self.obstore_kwargs())

    # -- internals ----------------------------------------------------------------------------

    def _program(self) -> list[str]:
        return [str(weed_binary(self.version))]

    def _command(self, program: list[str], work: Path, ports: list[int]
                 ) -> tuple[list[str], dict[str, str]]:
        (work / "data").mkdir(exist_ok=True)
        command = [
            # glog's files would otherwise go to /tmp: its output goes to the log instead.
            *program, "-logtostderr", "mini", f"-dir={work / 'data'}", "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            *(f"-{flag}={port}" for flag, port in zip(_PORT_FLAGS, ports, strict=True)),
            "-s3.port.iceberg=0", "-s3.port.lance=0", "-admin.port.legacy=0",
            "-webdav=false", "-admin.ui=false", "-master.telemetry=false",
            f"-filer.localSocket={work / 'filer.sock'}", f"-s3.localSocket={work / 's3.sock'}",
        ]
        # An admin identity with these keys; requests signed otherwise are refused.
        environment = {**os.environ, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                       "AWS_SECRET_ACCESS_KEY": SECRET_KEY}
        environment.pop("S3_BUCKET", None)
        return command, environment

    def _ready(self, port: int) -> bool:
        return _created(f"http://127.0.0.1:{port}", self.bucket)


def _created(endpoint: str, bucket: str) -> bool:
    """Whether CreateBucket through the AWS SDK (pyarrow's) at ``endpoint`` succeeds or finds
    the bucket there; False while the gateway does not answer or is not ready."""
    from pyarrow import fs

    store = fs.S3FileSystem(
        access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
        endpoint_override=endpoint, allow_bucket_creation=True, connect_timeout=1,
        request_timeout=5, retry_strategy=fs.AwsStandardS3RetryStrategy(max_attempts=1),
    )
    try:
        store.create_dir(bucket)
    except OSError:
        return False
    return True


def main() -> None:
    """``python -m kafka_share_eos.proving_ground.launchers.s3_server``: build SeaweedFS now
    (the test command does, so that a failed build fails it at once with Go's reason); silent
    when it is there."""
    local_server.prefetch(weed_binary)


if __name__ == "__main__":
    main()
