"""fake-gcs-server as the suite starts it: its JSON API refuses a second create
(``ifGenerationMatch=0``), obstore and delta-rs read what it holds with the storage options the
docs give for an emulator, and every write of object_store (obstore, delta-rs: an XML API
``PUT``) is answered 400, which is why no ``gs://`` pipeline runs on it (docs/real-cluster.md,
object stores)."""

from __future__ import annotations

import uuid
from pathlib import Path

import obstore
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import DeltaError
from obstore.exceptions import GenericError

from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer
from kafka_share_eos.storage import Location

NO_XML_PUT = r"PUT .*400 Bad Request.*invalid uploadType"


def test_a_second_create_is_refused_and_the_first_content_kept(gcs_server: GcsServer) -> None:
    key = f"create/{uuid.uuid4().hex}"

    assert gcs_server.upload(key, b"first", if_absent=True)
    assert not gcs_server.upload(key, b"second", if_absent=True)

    assert bytes(obstore.get(gcs_server.obstore_store(), key).bytes()) == b"first"


def test_the_toolkit_reads_and_lists_what_the_server_holds(gcs_server: GcsServer) -> None:
    prefix = f"read-{uuid.uuid4().hex}"
    for name in ("a", "b/c"):
        gcs_server.upload(f"{prefix}/{name}", name.encode())

    fs, root = Location(gcs_server.url(prefix), gcs_server.storage_options()).open_existing()

    listed = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    assert sorted((info.path, info.size) for info in listed if info.is_file) == [
        (f"{prefix}/a", 1), (f"{prefix}/b/c", 3)]
    with fs.open_input_stream(f"{root}/b/c") as source:
        assert source.read() == b"b/c"


def test_delta_rs_reads_a_table_the_server_holds(gcs_server: GcsServer, tmp_path: Path) -> None:
    write_deltalake(tmp_path, pa.table({"x": [1, 2, 3]}))
    write_deltalake(tmp_path, pa.table({"x": [4]}), mode="append")
    prefix = f"delta-{uuid.uuid4().hex}"
    for path in tmp_path.rglob("*"):
        if path.is_file():
            gcs_server.upload(f"{prefix}/{path.relative_to(tmp_path).as_posix()}",
                              path.read_bytes())

    table = DeltaTable(gcs_server.url(prefix), storage_options=gcs_server.storage_options())

    assert table.version() == 1
    assert sorted(table.to_pyarrow_table().column("x").to_pylist()) == [1, 2, 3, 4]


def test_every_write_of_object_store_is_answered_400(gcs_server: GcsServer) -> None:
    store, key = gcs_server.obstore_store(), f"write/{uuid.uuid4().hex}"

    with pytest.raises(GenericError, match=NO_XML_PUT):
        obstore.put(store, key, b"x", mode="create")
    with pytest.raises(GenericError, match=NO_XML_PUT):
        obstore.put(store, key, b"x")
    with pytest.raises(DeltaError, match=NO_XML_PUT):
        write_deltalake(gcs_server.url(f"delta-{uuid.uuid4().hex}"), pa.table({"x": [1]}),
                        storage_options=gcs_server.storage_options())

    assert obstore.list(store, "write").collect() == []
