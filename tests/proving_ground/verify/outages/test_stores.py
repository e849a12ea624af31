"""The object-store faults as verify cells: the run's own S3 server SIGKILLed and started again,
a share of its requests answered 503 or 500, seconds of latency on every answer, its endpoint
refused and then blackholed; every durable path of the run on it (``--storage s3``), on the
embedded broker and on Apache Kafka.

CI runs one cell: the store kill on the embedded broker with the SQLite upsert (its journal,
checkpoint and dead letters on S3). The other faults, every strategy, and Apache Kafka with four
consumers on one partition run under the ``full`` marker.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import obstore
import pytest
from obstore.store import S3Store
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.s3_server import SECRET_KEY
from kafka_share_eos.proving_ground.verify.known_targets import SAFE_TARGETS, TARGETS
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.outages import OUTAGES, check_faults
from kafka_share_eos.proving_ground.verify.outages.store_fronts import Phases, fronted_store

STORE_FAULTS = ("store-kill", "store-errors", "store-latency", "store-unreachable")


def test_the_store_faults_own_a_store_allow_restarts_and_run_on_either_broker() -> None:
    for name in STORE_FAULTS:
        outage = OUTAGES[name]
        assert outage.owns_store and outage.restarts and not outage.needs_kafka, name
        assert outage.description and outage.brokers == 1
        assert all(outage.fits(target) for target in TARGETS.values())
    check_faults(STORE_FAULTS, "embedded")
    assert not OUTAGES["postgres-kill"].owns_store


def test_the_store_faults_need_every_path_on_s3() -> None:
    options = MatrixOptions(targets=SAFE_TARGETS, points=(), faults=STORE_FAULTS, storage="s3")
    options.check()
    assert len(options.cells()) == len(SAFE_TARGETS) * len(STORE_FAULTS)
    for storage in ("local", "abfs"):
        refused = MatrixOptions(points=(), faults=STORE_FAULTS, storage=storage)  # type: ignore[arg-type]
        with pytest.raises(ConfigurationError, match=r"store-kill, store-errors.* --storage s3"):
            refused.check()


@pytest.mark.parametrize("front", ["none", "tcp", "http"])
def test_the_pipelines_reach_the_store_through_the_front_and_the_verifier_goes_direct(
    front: Any,
) -> None:
    with fronted_store(front) as store:
        pipelines, server = store.environment(), store.server.environment()
        assert {key: value for key, value in pipelines.items() if key != "AWS_ENDPOINT_URL"} == {
            key: value for key, value in server.items() if key != "AWS_ENDPOINT_URL"}
        assert store.storage_options()["aws_endpoint_url"] == server["AWS_ENDPOINT_URL"]
        assert (pipelines["AWS_ENDPOINT_URL"] == server["AWS_ENDPOINT_URL"]) == (front == "none")
        # The front forwards to the server: what goes in through it is read back directly.
        kwargs = {**store.s3.obstore_kwargs(), "endpoint": pipelines["AWS_ENDPOINT_URL"]}
        obstore.put(S3Store(**kwargs), "through-the-front", b"x", mode="create")
        assert bytes(obstore.get(store.s3.obstore_store(), "through-the-front").bytes()) == b"x"


def test_phases_run_in_order_and_stop_where_they_are() -> None:
    ran: list[tuple[str, float]] = []
    started = time.monotonic()
    second = threading.Event()

    def step(name: str) -> Any:
        def run() -> None:
            ran.append((name, time.monotonic() - started))
            if name == "second":
                second.set()
        return run

    phases = Phases([(0.2, step("first")), (60.0, step("second")), (0.0, step("third"))])
    phases.start()
    assert [name for name, _ in ran] == ["first"]
    assert second.wait(30)
    phases.stop()
    assert [name for name, _ in ran] == ["first", "second"]
    assert ran[1][1] >= 0.2


def _run_cells(work: Path, strategies: list[str], faults: list[str], *extra: str,
               results: Path | None = None) -> list[dict[str, Any]]:
    """Every cell's JSON report; each exactly once, struck, without error."""
    outcome = CliRunner().invoke(app, [
        "verify", "--storage", "s3", "--strategy", ",".join(strategies), "--faults",
        ",".join(faults), "--faults-only", "--records", "40", "--workdir", str(work), "--json",
        *(["--results", str(results)] if results is not None else []), *extra,
    ])
    assert outcome.exit_code == 0, outcome.output
    cells = json.loads(outcome.stdout)["cells"]
    for cell in cells:
        assert (cell["ok"], cell["duplicates"], cell["losses"], cell["errors"]) == (
            True, 0, 0, []), cell
        for run in cell["run_details"]:
            assert run["fault"]["struck_at"] and run["fault"]["error"] is None, run["fault"]
    return cells


@pytest.mark.timeout(600)
def test_the_s3_server_killed_mid_batch_and_started_again_is_exactly_once(tmp_path: Path) -> None:
    (cell,) = _run_cells(tmp_path, ["upsert-sqlite"], ["store-kill"])
    (run,) = cell["run_details"]
    did = run["fault"]["did"]
    assert "SIGKILL of the S3 server" in did and "started again on its data directory" in did
    assert cell["records"] == 40
    (config,) = tmp_path.glob("*/config.json")
    assert SECRET_KEY not in config.read_text()
    assert json.loads(config.read_text())["store_root"].startswith("s3://")


@pytest.mark.full
@pytest.mark.postgres
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("fault", STORE_FAULTS)
def test_each_store_fault_on_every_strategy_is_exactly_once(tmp_path: Path, fault: str) -> None:
    cells = _run_cells(tmp_path, list(SAFE_TARGETS), [fault])
    assert {cell["strategy"] for cell in cells} == set(SAFE_TARGETS)


@pytest.mark.full
@pytest.mark.kafka
@pytest.mark.postgres
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("fault", ["store-kill", "store-unreachable"])
def test_store_faults_with_four_consumers_on_one_kafka_partition_are_exactly_once(
    tmp_path: Path, fault: str,
) -> None:
    cells = _run_cells(tmp_path, ["dedup-delta", "two-phase"], [fault], "--broker", "kafka",
                       "--consumers", "4", "--partitions", "1")
    assert len(cells) == 2
