"""Files that appear whole or not at all, and files only their first writer creates, on a local
directory (and on the stores that take the other paths: an in-memory object store and pyarrow's
mock filesystem); locations opened, created or only inspected."""

from __future__ import annotations

import os
import threading
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from kafka_share_eos.errors import (
    ConfigurationError,
    LocationNotFoundError,
    StoreUnreachableError,
)
from kafka_share_eos.storage import files

WRITERS = 8


def read(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as source:
        return bytes(source.read())


def test_a_local_location_is_its_absolute_directory_created_on_demand(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fs, root = files.open_location("journal/run-1")
    assert isinstance(fs, pafs.LocalFileSystem)
    assert root == str(tmp_path / "journal" / "run-1")
    assert not (tmp_path / "journal").exists()
    assert files.open_location("journal/run-1", create=True)[1] == root
    assert (tmp_path / "journal" / "run-1").is_dir()


def test_a_file_uri_opens_the_same_directory(tmp_path: Path) -> None:
    fs, root = files.open_location(f"file://{tmp_path}/by-uri/", create=True)
    assert root == f"{tmp_path}/by-uri"
    files.write_atomically(fs, f"{root}/a", b"x")
    assert (tmp_path / "by-uri" / "a").read_bytes() == b"x"


def test_inspecting_a_location_needs_a_directory_there_and_creates_nothing(
    tmp_path: Path,
) -> None:
    with pytest.raises(LocationNotFoundError, match=r"no directory at '.*absent'"):
        files.open_existing(str(tmp_path / "absent"))
    assert not (tmp_path / "absent").exists()
    (tmp_path / "a-file").write_bytes(b"")
    with pytest.raises(LocationNotFoundError):
        files.open_existing(str(tmp_path / "a-file"))
    assert files.open_existing(str(tmp_path))[1] == str(tmp_path)


def test_a_uri_of_no_known_store_is_refused_by_name() -> None:
    with pytest.raises(ConfigurationError, match=r"'nope://bucket/j' is no location pyarrow"):
        files.open_location("nope://bucket/j")


def test_inspecting_a_store_that_cannot_be_reached_names_the_location() -> None:
    # Nothing listens on port 1: the toolkit's error names the location, the store's is its cause.
    unreachable = {"endpoint": "http://127.0.0.1:1", "allow_http": "true", "region": "x",
                   "aws_access_key_id": "x", "aws_secret_access_key": "y"}
    with pytest.raises(StoreUnreachableError, match=r"the store of 's3://bucket/j' could not be "
                       r"reached or refused access: .*127\.0\.0\.1:1") as raised:
        files.open_existing("s3://bucket/j", unreachable)
    assert "\n" not in str(raised.value) and raised.value.__cause__ is not None


@pytest.mark.parametrize("durable", [True, False])
def test_a_file_written_atomically_replaces_the_old_one_and_leaves_no_temp_file(
    tmp_path: Path, durable: bool
) -> None:
    fs, root = files.open_location(str(tmp_path))
    files.write_atomically(fs, f"{root}/state.json", b"old", durable=durable)
    files.write_atomically(fs, f"{root}/state.json", pa.py_buffer(b"new"), durable=durable)
    assert (tmp_path / "state.json").read_bytes() == b"new"
    assert os.listdir(tmp_path) == ["state.json"]


def test_a_write_that_fails_takes_its_temp_file_with_it(tmp_path: Path) -> None:
    fs, root = files.open_location(str(tmp_path))
    with pytest.raises(TypeError):
        files.write_atomically(fs, f"{root}/state.json", 12345)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        files.write_if_absent(fs, f"{root}/state.json", 12345)  # type: ignore[arg-type]
    assert os.listdir(tmp_path) == []


def test_only_the_first_writer_creates_a_file(tmp_path: Path) -> None:
    fs, root = files.open_location(str(tmp_path))
    assert files.write_if_absent(fs, f"{root}/seg", b"first")
    assert not files.write_if_absent(fs, f"{root}/seg", b"second")
    assert (tmp_path / "seg").read_bytes() == b"first"
    assert os.listdir(tmp_path) == ["seg"]


def test_writers_racing_for_one_file_have_exactly_one_winner(tmp_path: Path) -> None:
    fs, root = files.open_location(str(tmp_path))
    start = threading.Barrier(WRITERS)
    won: dict[int, bool] = {}

    def write(writer: int) -> None:
        start.wait()
        won[writer] = files.write_if_absent(fs, f"{root}/seg", b"%d" % writer)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    [winner] = [writer for writer, created in won.items() if created]
    assert len(won) == WRITERS
    assert (tmp_path / "seg").read_bytes() == b"%d" % winner
    assert os.listdir(tmp_path) == ["seg"]


def test_deleting_a_file_that_is_gone_is_no_error(tmp_path: Path) -> None:
    fs, root = files.open_location(str(tmp_path))
    files.write_atomically(fs, f"{root}/lease", b"x")
    files.delete_if_present(fs, f"{root}/lease")
    files.delete_if_present(fs, f"{root}/lease")
    assert os.listdir(tmp_path) == []


def test_an_object_store_takes_one_put_and_one_conditional_put() -> None:
    fs, root = files.open_location(f"memory:///bucket/{uuid.uuid4().hex}", create=True)
    files.write_atomically(fs, f"{root}/a", b"one")
    files.write_atomically(fs, f"{root}/a", b"two")
    assert files.write_if_absent(fs, f"{root}/b", b"first")
    assert not files.write_if_absent(fs, f"{root}/b", b"second")
    files.delete_if_present(fs, f"{root}/a")
    files.delete_if_present(fs, f"{root}/a")
    assert [info.base_name for info in fs.get_file_info(pafs.FileSelector(root))] == ["b"]
    assert read(fs, f"{root}/b") == b"first"


def test_another_store_gets_a_temp_file_moved_into_place_and_no_first_writer() -> None:
    fs = pafs._MockFileSystem()
    fs.create_dir("journal")
    files.write_atomically(fs, "journal/a", b"one")
    files.write_atomically(fs, "journal/a", b"two")
    assert read(fs, "journal/a") == b"two"
    assert [info.path for info in fs.get_file_info(pafs.FileSelector("journal"))] == [
        "journal/a"]
    with pytest.raises(NotImplementedError, match="mock storage cannot refuse a second writer"):
        files.write_if_absent(fs, "journal/b", b"first")


@pytest.mark.parametrize(("location", "supported"), [
    ("/data/journal", True), ("relative/journal", True), ("file:///data/journal", True),
    ("s3://bucket/journal", True), ("memory:///journal", True), ("abfss://c@a/journal", True),
    ("hdfs://namenode/journal", False), ("viewfs://cluster/journal", False),
])
def test_first_writer_wins_where_the_store_can_refuse_a_second_writer(
    location: str, supported: bool
) -> None:
    assert files.supports_write_if_absent(location) is supported
