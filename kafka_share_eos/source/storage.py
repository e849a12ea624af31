"""Where the source keeps its files: a local path or any ``pyarrow.fs`` URI.

The journal's segments and the per-batch metrics share these two primitives, so both work on
local disks, HDFS-like stores and object stores alike.
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.fs as pafs

# Object stores publish a put atomically, so a temp name would only cost a copy.
_ATOMIC_PUT_FILESYSTEMS = frozenset({"s3", "gcs", "abfs"})


def open_location(location: str, *, create: bool = True) -> tuple[pafs.FileSystem, str]:
    """The filesystem and root directory of ``location``.

    Args:
        location: a local path or a ``pyarrow.fs`` URI (``s3://…``, ``hdfs://…``, ``file://…``).
        create: create the directory when missing; otherwise raise :class:`FileNotFoundError`.
    """
    if "://" in location:
        fs, root = pafs.FileSystem.from_uri(location)
    else:
        fs, root = pafs.LocalFileSystem(), os.path.abspath(location)
    if create:
        fs.create_dir(root, recursive=True)
    elif fs.get_file_info(root).type != pafs.FileType.Directory:
        raise FileNotFoundError(f"no directory at {location!r}")
    return fs, root


def write_atomically(
    fs: pafs.FileSystem, directory: str, name: str, payload: bytes | pa.Buffer
) -> None:
    """Make ``directory/name`` durable and visible at once: a reader sees all of it or nothing."""
    final = f"{directory}/{name}"
    if isinstance(fs, pafs.LocalFileSystem):
        _write_local(directory, final, payload)
    elif fs.type_name in _ATOMIC_PUT_FILESYSTEMS:
        with fs.open_output_stream(final) as out:
            out.write(payload)
    else:
        temp = f"{directory}/.tmp-{uuid.uuid4().hex}"
        with fs.open_output_stream(temp) as out:
            out.write(payload)
        fs.move(temp, final)


def _write_local(directory: str, final: str, payload: bytes | pa.Buffer) -> None:
    temp = os.path.join(directory, f".tmp-{uuid.uuid4().hex}")
    with open(temp, "wb") as out:
        out.write(memoryview(payload))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, final)
    # The rename itself must survive a crash too.
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
