"""Object stores (S3, Azure Blob, GCS, memory) as ``pyarrow.fs`` filesystems, through obstore.

obstore is the Python face of Rust's ``object_store``, the library delta-rs writes Delta tables
with, so the journal, the decision logs and the Delta tables of one pipeline read the same
credentials the same way: from the environment (``AWS_*``, ``AZURE_*``, ``GOOGLE_*``) and from
the storage options the user passes, which go to obstore unchanged.

The code above this module reads and writes through ``pyarrow.fs`` calls; a
:class:`pyarrow.fs.PyFileSystem` around :class:`ObjectStoreHandler` answers them with obstore
requests. What ``pyarrow.fs`` has no word for, a put that only creates (S3 and Azure
``If-None-Match: *``, GCS ``ifGenerationMatch=0``), is :func:`put_if_absent`. Every writer checks
once per process and store that the store really refuses a second create
(:func:`check_conditional_writes`): a server that ignores the condition would let two consumers
overwrite each other's journal segments, so it is refused at start, never used.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import obstore
import pyarrow as pa
import pyarrow.fs as pafs
from obstore.exceptions import AlreadyExistsError, BaseError, PreconditionError
from obstore.store import from_url

from kafka_share_eos.errors import ConfigurationError, ObjectStoreError
from kafka_share_eos.storage.retries import split_retry_options

if TYPE_CHECKING:
    from obstore import ObjectMeta

OBJECT_STORE_SCHEMES = frozenset({"s3", "s3a", "az", "abfs", "abfss", "azure", "gs", "memory"})
STORE_ERRORS: tuple[type[Exception], ...] = (OSError, BaseError)
"""What a request to the toolkit's storage raises once it failed: an OS error, or obstore's own
error, which a status or a connection the client gave up on after its retries is (not an
``OSError``). For what is caught because it is not data: metrics, figures."""
_CONFLICT_RETRIES = 5
# Settings of the HTTP client rather than of the store. delta-rs takes them in the same dict
# (``aws_allow_http``); obstore wants them apart, without the store's prefix.
_CLIENT_OPTIONS = frozenset({
    "allow_http", "allow_invalid_certificates", "connect_timeout", "default_content_type",
    "pool_idle_timeout", "pool_max_idle_per_host", "proxy_url", "proxy_ca_certificate",
    "proxy_excludes", "randomize_addresses", "read_timeout", "timeout", "user_agent",
})
_STORE_PREFIXES = ("aws_", "azure_", "google_")
_ENVIRONMENT_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_")


def is_object_store(location: str) -> bool:
    """Whether ``location`` is a URI of a store :mod:`obstore` serves."""
    scheme, sep, _ = location.partition("://")
    return bool(sep) and scheme.lower() in OBJECT_STORE_SCHEMES


class ObjectStoreHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """``pyarrow.fs`` calls answered by one obstore store; paths are the store's keys.

    Object stores have no directories: every prefix "exists", listing one that holds nothing
    is empty, and creating one does nothing.
    """

    def __init__(self, store: Any, url: str) -> None:
        self.store = store
        self.url = url

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectStoreHandler) and other.store is self.store

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self.store)

    def get_type_name(self) -> str:
        return "obstore"

    def normalize_path(self, path: str) -> str:
        return path.strip("/")

    def get_file_info(self, paths: Iterable[str]) -> list[pafs.FileInfo]:
        return [self._info(path.strip("/")) for path in paths]

    def _info(self, path: str) -> pafs.FileInfo:
        if not path:
            return pafs.FileInfo(path, pafs.FileType.Directory)
        try:
            meta = obstore.head(self.store, path)
        except FileNotFoundError:
            listed = obstore.list_with_delimiter(self.store, path)
            held = listed["objects"] or listed["common_prefixes"]
            return pafs.FileInfo(path, pafs.FileType.Directory if held
                                 else pafs.FileType.NotFound)
        return pafs.FileInfo(path, pafs.FileType.File, size=meta["size"])

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        prefix = selector.base_dir.strip("/")
        objects: Sequence[ObjectMeta]
        directories: Sequence[str] = []
        if selector.recursive:
            objects = [meta for chunk in obstore.list(self.store, prefix or None)
                       for meta in chunk]
        else:
            listed = obstore.list_with_delimiter(self.store, prefix or None)
            objects, directories = listed["objects"], listed["common_prefixes"]
        infos = [pafs.FileInfo(meta["path"], pafs.FileType.File, size=meta["size"])
                 for meta in objects]
        infos += [pafs.FileInfo(path.rstrip("/"), pafs.FileType.Directory)
                  for path in directories]
        return infos

    def create_dir(self, path: str, recursive: bool) -> None:
        return None

    def delete_dir(self, path: str) -> None:
        self.delete_dir_contents(path, missing_dir_ok=True)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        for chunk in obstore.list(self.store, path.strip("/") or None):
            obstore.delete(self.store, [meta["path"] for meta in chunk])

    def delete_root_dir_contents(self) -> None:
        raise OSError(f"refusing to empty the whole store {self.url}")

    def delete_file(self, path: str) -> None:
        obstore.delete(self.store, path.strip("/"))

    def move(self, src: str, dest: str) -> None:
        obstore.rename(self.store, src.strip("/"), dest.strip("/"))

    def copy_file(self, src: str, dest: str) -> None:
        obstore.copy(self.store, src.strip("/"), dest.strip("/"))

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return pa.BufferReader(pa.py_buffer(obstore.get(self.store, path.strip("/")).bytes()))

    def open_input_file(self, path: str) -> pa.NativeFile:
        return self.open_input_stream(path)

    def open_output_stream(self, path: str, metadata: Mapping[str, str]) -> pa.NativeFile:
        return pa.PythonFile(_PutOnClose(self.store, path.strip("/")), mode="w")

    def open_append_stream(self, path: str, metadata: Mapping[str, str]) -> pa.NativeFile:
        raise OSError(f"object stores cannot append to {self.url}/{path}")


class _PutOnClose(io.BytesIO):
    """Bytes written to an output stream, stored in one put when it is closed: a reader sees
    the whole object or none."""

    def __init__(self, store: Any, path: str) -> None:
        super().__init__()
        self._store = store
        self._path = path

    def close(self) -> None:
        if not self.closed:
            obstore.put(self._store, self._path, self.getvalue())
        super().close()


_STORES: dict[tuple[str, tuple[tuple[str, str], ...]], pafs.PyFileSystem] = {}
_CHECKED: set[tuple[str, tuple[tuple[str, str], ...], str]] = set()
_LOCK = threading.Lock()


def _split(location: str) -> tuple[str, str]:
    """The store's own URL (scheme and bucket or container) and the key prefix under it."""
    scheme, _, rest = location.partition("://")
    if scheme.lower() == "memory":
        return "memory:///", rest.strip("/")
    bucket, _, prefix = rest.partition("/")
    return f"{scheme}://{bucket}", prefix.strip("/")


def open_object_store(
    location: str, options: Mapping[str, str] | None, *, check: bool
) -> tuple[pafs.FileSystem, str]:
    """The filesystem and key prefix of ``location``; one client per store and options in a
    process. With ``check``, the store's conditional writes are checked first
    (:func:`check_conditional_writes`, once per process and location).

    Raises:
        ConfigurationError: an option is not a setting of that store, or a retry setting
            (:data:`~kafka_share_eos.storage.retries.RETRY_OPTIONS`) has no valid value.
        ObjectStoreError: ``check`` and the store does not refuse a second create.
    """
    url, root = _split(location)
    # The environment configures a store as much as its options do: a process pointed at
    # another endpoint (or other credentials) gets a client of its own.
    settings = {**{name: value for name, value in os.environ.items()
                   if name.startswith(_ENVIRONMENT_PREFIXES)}, **(options or {})}
    key: tuple[str, tuple[tuple[str, str], ...]] = (url, tuple(sorted(settings.items())))
    with _LOCK:
        filesystem = _STORES.get(key)
        if filesystem is None:
            config, client = _split_options(options or {})
            config, retry = split_retry_options(config)
            try:
                store = from_url(url, config=cast(Any, config),
                                 client_options=cast(Any, client) or None,
                                 retry_config=cast(Any, retry) or None)
            except BaseError as error:
                raise ConfigurationError(
                    f"storage options for {location!r}: {_first_line(error)}"
                ) from error
            filesystem = pafs.PyFileSystem(ObjectStoreHandler(store, url))
            _STORES[key] = filesystem
    if check and (*key, root) not in _CHECKED:
        check_conditional_writes(filesystem, root, location)
        with _LOCK:
            _CHECKED.add((*key, root))
    return filesystem, root


def _split_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """The store's settings and the HTTP client's, from one dict as delta-rs takes it."""
    config: dict[str, str] = {}
    client: dict[str, str] = {}
    for key, value in options.items():
        name = key.lower()
        for prefix in _STORE_PREFIXES:
            name = name.removeprefix(prefix)
        if name in _CLIENT_OPTIONS:
            client[name] = value
        else:
            config[key] = value
    return config, client


def handler_of(filesystem: pafs.FileSystem) -> ObjectStoreHandler | None:
    """The obstore handler behind ``filesystem``, None for any other filesystem."""
    if isinstance(filesystem, pafs.PyFileSystem):
        handler = filesystem.handler
        if isinstance(handler, ObjectStoreHandler):
            return handler
    return None


def put(handler: ObjectStoreHandler, path: str, payload: bytes | pa.Buffer) -> None:
    """Store ``payload`` at ``path`` in one put: visible whole or not at all."""
    obstore.put(handler.store, path.strip("/"), _as_bytes(payload))


def put_if_absent(handler: ObjectStoreHandler, path: str, payload: bytes | pa.Buffer) -> bool:
    """Create the object at ``path`` unless one is there; return whether this call created it.

    A store answers a create racing another one on the same key with a conflict (S3: 409):
    the race is decided by the time the next attempt is answered, so it is asked again.
    """
    for attempt in range(_CONFLICT_RETRIES):
        try:
            obstore.put(handler.store, path.strip("/"), _as_bytes(payload), mode="create")
        except (AlreadyExistsError, PreconditionError):
            return False
        except BaseError as error:
            if "409" not in str(error) or attempt == _CONFLICT_RETRIES - 1:
                raise
            time.sleep(0.05 * 2**attempt)
        else:
            return True
    raise AssertionError("unreachable")


def check_conditional_writes(filesystem: pafs.FileSystem, root: str, location: str) -> None:
    """Refuse a store that accepts a second create of one key.

    Raises:
        ObjectStoreError: the second create succeeded, so first-writer-wins files (journal
            segments of ``consumers=N``, leases, two-phase decisions) would be overwritten.
    """
    handler = handler_of(filesystem)
    if handler is None:
        return
    probe = f"{root}/_kse_conditional_write_check/{uuid.uuid4().hex}".strip("/")
    try:
        first = put_if_absent(handler, probe, b"first")
        second = put_if_absent(handler, probe, b"second")
    finally:
        # GCS answers the delete of a probe it never created with 404, where S3 and Azure
        # answer success: that "not found" must not hide why the create failed.
        with contextlib.suppress(FileNotFoundError):
            obstore.delete(handler.store, probe)
    if not first or second:
        raise ObjectStoreError(
            f"the object store at {location!r} does not refuse a second create of one key "
            "(a put with If-None-Match: *; ifGenerationMatch=0 on GCS): files written "
            "first-writer-wins there could be overwritten, so the toolkit will not write them. "
            "Use a store that honours conditional writes (Amazon S3, Azure Blob Storage, "
            "Google Cloud Storage, or an S3-compatible server that answers 412 Precondition "
            "Failed)"
        )


def _as_bytes(payload: bytes | pa.Buffer) -> bytes:
    return payload if isinstance(payload, bytes) else payload.to_pybytes()


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
