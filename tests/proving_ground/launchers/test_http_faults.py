"""mitmproxy in front of the suite's S3 server answers chosen requests with 503 SlowDown or
500 InternalError: obstore and pyarrow retry through them to the data, a failed request never
reaches the store, and a client without retries left names the status."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import obstore
import pyarrow.fs as pafs
import pytest
from obstore.store import S3Store

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server

pytestmark = pytest.mark.timeout(120)

QUICK_RETRIES = {"backoff": {"init_backoff": timedelta(milliseconds=20),
                             "max_backoff": timedelta(milliseconds=100), "base": 2}}


@pytest.fixture(scope="module")
def front(s3_server: S3Server) -> Iterator[HttpFaults]:
    with HttpFaults(s3_server.endpoint) as faults:
        yield faults


@pytest.fixture
def faults(front: HttpFaults) -> Iterator[HttpFaults]:
    yield front
    front.heal()


@pytest.fixture
def prefix() -> str:
    return f"http-faults/{uuid.uuid4().hex[:8]}"


def store(s3_server: S3Server, front: HttpFaults, **retry: Any) -> S3Store:
    """obstore on the bucket through the front, retrying as told (its defaults otherwise)."""
    kwargs = {**s3_server.obstore_kwargs(), "endpoint": front.endpoint}
    return S3Store(**kwargs, retry_config={**QUICK_RETRIES, **retry})


def test_writes_ride_out_slowdowns_while_reads_pass(
    s3_server: S3Server, faults: HttpFaults, prefix: str
) -> None:
    through = store(s3_server, faults, max_retries=5)
    obstore.put(through, f"{prefix}/before", b"read me")
    faults.fail(503, requests="writes", count=3)
    assert bytes(obstore.get(through, f"{prefix}/before").bytes()) == b"read me"
    obstore.put(through, f"{prefix}/segment", b"written once")
    assert (faults.answered, faults.matched) == (3, 4)
    direct = s3_server.obstore_store()
    assert bytes(obstore.get(direct, f"{prefix}/segment").bytes()) == b"written once"


def test_a_client_out_of_retries_names_the_status_and_nothing_lands(
    s3_server: S3Server, faults: HttpFaults, prefix: str
) -> None:
    faults.fail(503, requests="writes")
    with pytest.raises(Exception, match="503") as error:
        obstore.put(store(s3_server, faults, max_retries=1), f"{prefix}/refused", b"x")
    assert "SlowDown" in str(error.value)
    assert faults.answered == 2
    with pytest.raises(FileNotFoundError):
        obstore.head(s3_server.obstore_store(), f"{prefix}/refused")
    faults.heal()
    obstore.put(store(s3_server, faults, max_retries=0), f"{prefix}/refused", b"x")


def test_reads_ride_out_internal_errors(
    s3_server: S3Server, faults: HttpFaults, prefix: str
) -> None:
    obstore.put(s3_server.obstore_store(), f"{prefix}/data", b"payload")
    faults.fail(500, requests="reads", count=2)
    assert bytes(obstore.get(store(s3_server, faults, max_retries=3), f"{prefix}/data").bytes()
                 ) == b"payload"
    assert faults.answered == 2


def test_a_share_of_requests_fails_evenly(
    s3_server: S3Server, faults: HttpFaults, prefix: str
) -> None:
    obstore.put(s3_server.obstore_store(), f"{prefix}/data", b"payload")
    faults.fail(503, requests="reads", share=0.5)
    through = store(s3_server, faults, max_retries=3)
    for _ in range(10):
        assert bytes(obstore.get(through, f"{prefix}/data").bytes()) == b"payload"
    # Every other read is answered 503 and retried: 10 served, 9 refused in between.
    assert (faults.matched, faults.answered) == (19, 9)


def test_pyarrow_writes_and_reads_through_slowdowns(
    s3_server: S3Server, faults: HttpFaults, prefix: str
) -> None:
    options = s3_server.obstore_kwargs()
    fs = pafs.S3FileSystem(access_key=options["access_key_id"],
                           secret_key=options["secret_access_key"], region=options["region"],
                           endpoint_override=faults.endpoint, scheme="http")
    path = f"{s3_server.bucket}/{prefix}/table.bin"
    faults.fail(503, count=2)
    with fs.open_output_stream(path) as sink:
        sink.write(b"from pyarrow")
    assert faults.answered == 2
    faults.fail(503, requests="reads", count=2)
    with fs.open_input_stream(path) as source:
        assert source.read() == b"from pyarrow"
    assert faults.answered == 2


@pytest.mark.parametrize("arguments", [{"status": 200}, {"share": 0.0}, {"count": -1},
                                       {"requests": "lists"}])
def test_a_rule_that_fails_nothing_is_refused(faults: HttpFaults, arguments: Any) -> None:
    with pytest.raises(ConfigurationError):
        faults.fail(**arguments)
