"""The retry settings of the storage options reach obstore as they reach delta-rs: a journal on
the suite's S3 server, behind mitmproxy answering 503 SlowDown, retries as often as they say."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta

import obstore
import pyarrow as pa
import pytest
from obstore.exceptions import GenericError

from kafka_share_eos.delta.location import DeltaLocation
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.storage import Location
from kafka_share_eos.storage.retries import split_retry_options

QUICK = {"backoff_config.init_backoff": "10ms", "backoff_config.max_backoff": "50ms"}


def test_retry_settings_become_obstore_s_retry_config_and_the_rest_stays() -> None:
    rest, retry = split_retry_options({
        "aws_region": "eu-west-1", "max_retries": "25", "retry_timeout": "2m 30s",
        "backoff_config.init_backoff": "200ms", "max_backoff": "20s", "backoff.base": "3",
    })

    assert rest == {"aws_region": "eu-west-1"}
    assert retry == {"max_retries": 25, "retry_timeout": timedelta(seconds=150),
                     "backoff": {"init_backoff": timedelta(milliseconds=200),
                                 "max_backoff": timedelta(seconds=20), "base": 3.0}}
    assert split_retry_options({"aws_region": "eu-west-1"})[1] == {}


@pytest.mark.parametrize(("key", "value"), [
    ("max_retries", "many"), ("max_retries", "-1"), ("retry_timeout", "30"),
    ("retry_timeout", "3 fortnights"), ("backoff_config.init_backoff", "1M"),
    ("backoff_config.base", "x"),
])
def test_a_retry_setting_of_no_count_or_duration_is_refused_naming_it(
    key: str, value: str
) -> None:
    with pytest.raises(ConfigurationError, match=key):
        split_retry_options({key: value})


@pytest.fixture(scope="module")
def faults(s3_server: S3Server) -> Iterator[HttpFaults]:
    with HttpFaults(s3_server.endpoint) as front:
        yield front


def _batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pylist(
        [{"topic": "t", "partition": 0, "offset": 7, "deliveryCount": 1}], schema=JOURNAL_SCHEMA)


def _journal(s3_server: S3Server, faults: HttpFaults, **retries: str) -> Journal:
    options = {key: value for key, value in s3_server.storage_options().items()
               if key != "aws_conditional_put"}
    options["aws_endpoint_url"] = faults.endpoint
    return Journal(Location(s3_server.url(f"retries/{uuid.uuid4().hex[:8]}"),
                            {**options, **QUICK, **retries}))


@pytest.mark.timeout(120)
def test_a_journal_retries_slowdowns_as_often_as_its_storage_options_say(
    s3_server: S3Server, faults: HttpFaults
) -> None:
    patient = _journal(s3_server, faults, max_retries="6")
    patient.write(1, _batch())
    faults.fail(503, requests="writes", count=5)
    patient.write(2, _batch())
    assert faults.answered == 5
    assert patient.read(2).column("offset").to_pylist() == [7]

    hasty = _journal(s3_server, faults, max_retries="2")
    hasty.write(1, _batch())
    faults.fail(503, requests="writes")
    with pytest.raises(GenericError, match=r"after 2 retries.*503.*SlowDown"):
        hasty.write(2, _batch())
    assert faults.answered == 3
    faults.heal()
    prefix = hasty.location.removeprefix(f"s3://{s3_server.bucket}/")
    assert obstore.head(s3_server.obstore_store(), f"{prefix}/{1:020d}.arrow")["size"] > 0
    with pytest.raises(FileNotFoundError):
        obstore.head(s3_server.obstore_store(), f"{prefix}/{2:020d}.arrow")


def test_delta_rs_takes_the_same_retry_settings(s3_server: S3Server) -> None:
    options = {**s3_server.storage_options(), **QUICK, "max_retries": "6", "retry_timeout": "1m"}
    table = DeltaLocation(s3_server.url(f"retries/{uuid.uuid4().hex[:8]}"), options)

    created = table.create(pa.schema([("id", pa.int64())]))

    assert created.version() == 0 and table.exists()
