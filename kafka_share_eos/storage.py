"""Where the toolkit keeps its own files: a local path or any ``pyarrow.fs`` URI.

The source's journal and batch metrics and two-phase commit's decision log and staged Delta
files share these primitives, so all of them work on local disks, HDFS-like stores and object
stores alike.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_share_eos.errors import LocationNotFoundError

# Object stores publish a put atomically, so a temp name would only cost a copy.
_ATOMIC_PUT_FILESYSTEMS = frozenset({"s3", "gcs", "abfs"})


def open_location(location: str, *, create: bool = False) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root directory of ``location``, created when ``create``.

    Args:
        location: a local path (relative or not) or a ``pyarrow.fs`` URI (``s3://…``,
            ``hdfs://…``, ``file://…``).
        create: create the directory when missing.
    """
    if "://" in location:
        fs, root = pafs.FileSystem.from_uri(location)
        root = root.rstrip("/")
    else:
        fs, root = pafs.LocalFileSystem(), os.path.abspath(location)
    if create:
        fs.create_dir(root, recursive=True)
    return fs, root


def open_existing(location: str) -> tuple[pafs.FileSystem, str]:
    """Like :func:`open_location`, for inspecting without changing anything.

    Raises:
        LocationNotFoundError: there is no directory at ``location``.
    """
    fs, root = open_location(location)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
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
    if isinstance(fs, pafs.LocalFileSystem):
        _write_local(directory, path, payload, durable)
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

    Only local (and shared POSIX) filesystems can refuse a second writer atomically: the file
    is written and fsynced under a temp name, then hard-linked to ``path``, which fails when
    ``path`` exists. Other stores raise :class:`NotImplementedError` (see
    :func:`supports_write_if_absent`).
    """
    if not isinstance(fs, pafs.LocalFileSystem):
        raise NotImplementedError(
            f"{fs.type_name} storage cannot refuse a second writer atomically; use a local or "
            "shared POSIX path"
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
    """Whether :func:`write_if_absent` works at ``location`` (a local path or ``file://``)."""
    return "://" not in location or location.startswith("file://")


def delete_if_present(fs: pafs.FileSystem, path: str) -> None:
    """Delete the file at ``path``; a no-op when it is already gone."""
    try:
        fs.delete_file(path)
    except FileNotFoundError:
        return


def _temp_copy(directory: str, payload: bytes | pa.Buffer, durable: bool = True) -> str:
    temp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
    with open(temp, "wb") as out:
        out.write(memoryview(payload))
        if durable:
            out.flush()
            os.fsync(out.fileno())
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
