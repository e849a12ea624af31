"""ctypes bindings to the mock cluster inside the librdkafka that confluent-kafka bundles.

Only the handful of entry points the embedded broker needs are bound, with their exact C
signatures from ``src/rdkafka_mock.h``: a wrong ``argtypes`` would silently truncate pointers.
"""

from __future__ import annotations

import ctypes
import glob
import os
from functools import cache

import confluent_kafka

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.broker.errors import (
    EmbeddedBrokerError,
    LibrdkafkaNotFoundError,
)

_RD_KAFKA_PRODUCER = 0
_ERRSTR_SIZE = 512

_SHAREGROUP_SETTERS = (
    "record_lock_duration",
    "max_delivery_attempts",
    "session_timeout",
    "heartbeat_interval",
    "auto_offset_reset",
)


def _library_path() -> str:
    libs_dir = os.path.normpath(
        os.path.join(os.path.dirname(confluent_kafka.__file__), os.pardir, "confluent_kafka.libs")
    )
    candidates = glob.glob(os.path.join(libs_dir, "librdkafka*.so*"))
    if not candidates:
        raise LibrdkafkaNotFoundError(
            "the embedded broker needs the librdkafka bundled in the confluent-kafka wheel "
            f"(looked in {libs_dir}); install confluent-kafka from its binary wheel"
        )
    return os.path.normpath(candidates[0])


@cache
def library() -> ctypes.CDLL:
    """Load the bundled librdkafka once and declare the signatures the broker uses."""
    lib = ctypes.CDLL(_library_path())
    ptr, cint, cstr = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p

    lib.rd_kafka_conf_new.restype = ptr
    lib.rd_kafka_conf_new.argtypes = []
    lib.rd_kafka_conf_set.restype = cint
    lib.rd_kafka_conf_set.argtypes = [ptr, cstr, cstr, cstr, ctypes.c_size_t]
    lib.rd_kafka_new.restype = ptr
    lib.rd_kafka_new.argtypes = [cint, ptr, cstr, ctypes.c_size_t]
    lib.rd_kafka_destroy.restype = None
    lib.rd_kafka_destroy.argtypes = [ptr]

    lib.rd_kafka_mock_cluster_new.restype = ptr
    lib.rd_kafka_mock_cluster_new.argtypes = [ptr, cint]
    lib.rd_kafka_mock_cluster_destroy.restype = None
    lib.rd_kafka_mock_cluster_destroy.argtypes = [ptr]
    lib.rd_kafka_mock_cluster_bootstraps.restype = cstr
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ptr]
    lib.rd_kafka_mock_topic_create.restype = cint
    lib.rd_kafka_mock_topic_create.argtypes = [ptr, cstr, cint, cint]
    lib.rd_kafka_err2str.restype = cstr
    lib.rd_kafka_err2str.argtypes = [cint]
    for name in _SHAREGROUP_SETTERS:
        setter = getattr(lib, f"rd_kafka_mock_sharegroup_set_{name}")
        setter.restype = None
        setter.argtypes = [ptr, cint]
    return lib


class MockCluster:
    """Owns one librdkafka mock cluster and the client handle it is attached to."""

    def __init__(self, brokers: int = 1) -> None:
        lib = library()
        errstr = ctypes.create_string_buffer(_ERRSTR_SIZE)
        conf = lib.rd_kafka_conf_new()
        # The handle only hosts the cluster; its own log chatter is noise.
        lib.rd_kafka_conf_set(conf, b"log_level", b"3", errstr, _ERRSTR_SIZE)
        handle = lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, errstr, _ERRSTR_SIZE)
        if not handle:
            raise EmbeddedBrokerError(
                f"librdkafka could not create a client handle: {errstr.value.decode()}"
            )
        cluster = lib.rd_kafka_mock_cluster_new(handle, brokers)
        if not cluster:
            lib.rd_kafka_destroy(handle)
            raise EmbeddedBrokerError("librdkafka could not create a mock cluster")
        self._lib = lib
        self._handle: int | None = handle
        self._cluster: int | None = cluster

    @property
    def bootstrap_servers(self) -> str:
        return str(self._lib.rd_kafka_mock_cluster_bootstraps(self._live()).decode())

    def create_topic(self, name: str, partitions: int) -> None:
        err = self._lib.rd_kafka_mock_topic_create(self._live(), name.encode(), partitions, 1)
        if err:
            reason = self._lib.rd_kafka_err2str(err).decode()
            raise EmbeddedBrokerError(f"could not create topic {name!r}: {reason}")

    def set_sharegroup(self, knob: str, value: int) -> None:
        if knob not in _SHAREGROUP_SETTERS:
            raise ConfigurationError(f"unknown share-group setting {knob!r}")
        getattr(self._lib, f"rd_kafka_mock_sharegroup_set_{knob}")(self._live(), value)

    def close(self) -> None:
        if self._cluster is not None:
            self._lib.rd_kafka_mock_cluster_destroy(self._cluster)
            self._cluster = None
        if self._handle is not None:
            self._lib.rd_kafka_destroy(self._handle)
            self._handle = None

    def _live(self) -> int:
        if self._cluster is None:
            raise EmbeddedBrokerError("the embedded broker is closed")
        return self._cluster
