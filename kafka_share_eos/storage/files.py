"""Files that appear whole or not at all, and files only their first writer creates: on a local
disk (temp file, fsync, rename or hard link), on object stores (one put, a conditional put:
:mod:`~kafka_share_eos.storage.object_store`) and on other ``pyarrow.fs`` stores (temp + move).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Mapping

import pyarrow as pa
import pyarrow.fs as pafs
from obstore.exceptions import BaseError

from kafka_share_eos.errors import (
    ConfigurationError,
    LocationNotFoundError,
    StoreUnreachableError,
)
from kafka_share_eos.storage.object_store import (
    handler_of,
    is_object_store,
    open_object_store,
    put,
    put_if_absent,
)

# Object stores publish a put atomically, so a temp name would only cost a copy.
_ATOMIC_PUT_FILESYSTEMS = frozenset({"s3", "gcs", "abfs"})


def open_location(
    location: str, *, create: bool = False, options: Mapping[str, str] | None = None
) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root directory of ``location``, created when ``create``.

    Args:
        location: a local path (relative or not), an object store URI (``s3://…``,
            ``az://…``, ``abfss://…``, ``gs://…``) or another ``pyarrow.fs`` URI
            (``hdfs://…``, ``file://…``).
        create: create the directory when missing; on an object store, check first that the
            store refuses a second create of one key (once per process and store).
        options: the object store's settings (endpoint, region, credentials, ...), passed to
            obstore as they are; the environment's ``AWS_*``, ``AZURE_*`` and ``GOOGLE_*``
            variables are read too.

    Raises:
        ConfigurationError: an option is not a setting of that object store, or ``location``
            is a URI of no store pyarrow.fs knows.
        ObjectStoreError: ``create`` on an object store that does not refuse a second create.
    """
    if is_object_store(location):
        return open_object_store(location, options, check=create)
    if "://" in location:
        try:
            fs, root = pafs.FileSystem.from_uri(location)
        except pa.ArrowInvalid as error:
            raise ConfigurationError(
                f"{location!r} is no location pyarrow.fs knows ({error}): give a local path or "
                "a URI of a store it knows (s3://, gs://, abfs://, hdfs://, file://)"
            ) from error
        root = root.rstrip("/")
    else:
        fs, root = pafs.LocalFileSystem(), os.path.abspath(location)
    if create:
        fs.create_dir(root, recursive=True)
    return fs, root


def open_existing(
    location: str, options: Mapping[str, str] | None = None
) -> tuple[pafs.FileSystem, str]:
    """Like :func:`open_location`, for inspecting without changing anything.

    Raises:
        LocationNotFoundError: there is no directory at ``location`` (on an object store: no
            object under it).
        StoreUnreachableError: the store could not be reached or refused access.
    """
    fs, root = open_location(location, options=options)
    try:
        found = fs.get_file_info(root)
    except (OSError, BaseError) as error:
        # obstore's first line says what happened; a debug dump of the request follows it.
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise StoreUnreachableError(
            f"the store of {location!r} could not be reached or refused access: {reason}"
        ) from error
    if found.type != pafs.FileType.Directory:
        raise LocationNotFoundError(f"no directory at {location!r}")
    return fs, root


def write_atomically(
    fs: pafs.FileSystem, path: str, payload: bytes | pa.Buffer, *, durable: bool = True
) -> None:
    """Make the file at ``path`` durable and visible at once: a reader sees all of it or
    nothing (temp file + fsync + rename locally, one put on object stores, temp + move on
    HDFS-like stores).

    ``durable=False`` skips the local fsyncs: the file survives the death of the process but
    not of the machine, as files written through delta-rs on a local disk do.
    """
    directory = path.rsplit("/", 1)[0]
    handler = handler_of(fs)
    if isinstance(fs, pafs.LocalFileSystem):
        _write_local(directory, path, payload, durable)
    elif handler is not None:
        put(handler, path, payload)
    elif fs.type_name in _ATOMIC_PUT_FILESYSTEMS:
        with fs.open_output_stream(path) as out:
            out.write(payload)
    else:
        temp = f"{directory}/.tmp-{uuid.uuid4().hex}"
        with fs.open_output_stream(temp) as out:
            out.write(payload)
        fs.move(temp, path)


def write_if_absent(fs: pafs.FileSystem, path: str, payload: bytes | pa.Buffer) -> bool:
    """Make the file at ``path`` durable and visible at once unless a file is already there;
    return whether this call created it (first writer wins).

    On a local (or shared POSIX) filesystem the file is written and fsynced under a temp name,
    then hard-linked to ``path``, which fails when ``path`` exists; on an object store it is
    one conditional put. Other stores raise :class:`NotImplementedError` (see
    :func:`supports_write_if_absent`).
    """
    handler = handler_of(fs)
    if handler is not None:
        return put_if_absent(handler, path, payload)
    if not isinstance(fs, pafs.LocalFileSystem):
        raise NotImplementedError(
            f"{fs.type_name} storage cannot refuse a second writer atomically; use a local or "
            "shared POSIX path, or an object store"
        )
    directory = path.rsplit("/", 1)[0]
    temp = _temp_copy(directory, payload)
    try:
        os.link(temp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(temp)
    _fsync_directory(directory)
    return True


def supports_write_if_absent(location: str) -> bool:
    """Whether :func:`write_if_absent` works at ``location``: a local path, ``file://`` or an
    object store."""
    return "://" not in location or location.startswith("file://") or is_object_store(location)


def delete_if_present(fs: pafs.FileSystem, path: str) -> None:
    """Delete the file at ``path``; a no-op when it is already gone."""
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        return


def _temp_copy(directory: str, payload: bytes | pa.Buffer, durable: bool = True) -> str:
    temp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
    try:
        with open(temp, "wb") as out:
            out.write(memoryview(payload))
            if durable:
                out.flush()
                os.fsync(out.fileno())
    except BaseException:
        # A write that failed (a full disk) must give back the space it took: nothing else
        # ever deletes a temp file, so it would keep that space for good.
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _write_local(directory: str, final: str, payload: bytes | pa.Buffer, durable: bool) -> None:
    os.replace(_temp_copy(directory, payload, durable), final)
    if durable:
        # The rename itself must survive a crash too.
        _fsync_directory(directory)


def _fsync_directory(directory: str) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
