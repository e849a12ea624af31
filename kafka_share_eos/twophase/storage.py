"""Where the file-based parts of two-phase commit live: any ``pyarrow.fs`` location."""

from __future__ import annotations

import os
import uuid

from pyarrow import fs


def open_location(location: str) -> tuple[fs.FileSystem, str]:
    """The filesystem and root path of a local path (relative or not) or a filesystem URI."""
    if "://" in location:
        filesystem, path = fs.FileSystem.from_uri(location)
        return filesystem, path.rstrip("/")
    return fs.LocalFileSystem(), os.path.abspath(location)


def write_atomically(filesystem: fs.FileSystem, path: str, payload: bytes) -> None:
    """Write ``payload`` to ``path`` so that readers see all of it or nothing.

    The bytes go to a temporary name in the same directory, then are renamed over ``path``; on
    object stores the single upload of the move is atomic in the same way.
    """
    directory = path.rsplit("/", 1)[0]
    temporary = f"{directory}/.tmp-{uuid.uuid4().hex}"
    with filesystem.open_output_stream(temporary) as out:
        out.write(payload)
    filesystem.move(temporary, path)


def delete_if_present(filesystem: fs.FileSystem, path: str) -> None:
    """Delete the file at ``path``; a no-op when it is already gone."""
    try:
        filesystem.delete_file(path)
    except FileNotFoundError:
        return
