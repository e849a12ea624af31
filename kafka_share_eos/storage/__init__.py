"""Where the toolkit keeps its own files: a local path, an object store (``s3://``, ``az://``,
``abfs[s]://``, ``gs://``, ``memory://``) or any other ``pyarrow.fs`` URI.

The source's journal, leases and batch metrics, and two-phase commit's decision log and staged
Delta files share these primitives, so all of them work on local disks, object stores and
HDFS-like stores alike. Object stores are reached through ``obstore`` (Rust's ``object_store``,
the library delta-rs uses), whose conditional put makes a file first-writer-wins there too.
"""

from kafka_share_eos.storage.files import (
    delete_if_present,
    open_existing,
    open_location,
    supports_write_if_absent,
    write_atomically,
    write_if_absent,
)
from kafka_share_eos.storage.object_store import (
    OBJECT_STORE_SCHEMES,
    STORE_ERRORS,
    check_conditional_writes,
    is_object_store,
)
from kafka_share_eos.storage.store_location import Location, as_location

__all__ = [
    "OBJECT_STORE_SCHEMES",
    "STORE_ERRORS",
    "Location",
    "as_location",
    "check_conditional_writes",
    "delete_if_present",
    "is_object_store",
    "open_existing",
    "open_location",
    "supports_write_if_absent",
    "write_atomically",
    "write_if_absent",
]
