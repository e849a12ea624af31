"""Fault cells of verify: the registry of outages, the options that refuse them, the stall."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.errors import SparkClusterError
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.outages import (
    OUTAGES,
    Outage,
    Scene,
    brokers_for,
    check_faults,
)
from kafka_share_eos.proving_ground.verify.outages.broker_kills import (
    java_string_hash,
    share_state_partition,
)
from kafka_share_eos.proving_ground.verify.outages.driver import FaultDriver, hold_environment
from kafka_share_eos.proving_ground.verify.outages.gaps import (
    applied_times,
    held_batch,
    held_partitions,
    stall_seconds,
)
from kafka_share_eos.proving_ground.verify.outages.registry import proxied_for, spark_workers_for

BROKER_FAULTS = ("broker-kill", "coordinator-kill", "broker-restart")
FAULTS = (*BROKER_FAULTS, "partition", "worker-kill")


def test_the_broker_faults_are_registered_with_a_description_and_three_brokers() -> None:
    for name in BROKER_FAULTS:
        outage = OUTAGES[name]
        assert issubclass(outage, Outage) and outage.name == name and outage.description
    assert brokers_for(BROKER_FAULTS) == 3
    assert brokers_for(()) == 1
    assert OUTAGES["broker-restart"].heal_after_seconds == 0
    assert OUTAGES["broker-kill"].heal_after_seconds is None
    assert not proxied_for(BROKER_FAULTS)


def test_the_partition_is_registered_and_cuts_the_proxied_pipeline_past_the_record_lock() -> None:
    outage = OUTAGES["partition"]
    assert outage.name == "partition" and "blackhole" in outage.description
    assert outage.proxied and proxied_for(["broker-kill", "partition"])
    assert outage.brokers == 3
    assert outage.heal_after_seconds is not None and outage.heal_after_seconds > 2 * 4.0


def test_the_worker_kill_runs_on_a_spark_cluster_with_consumers_in_executors() -> None:
    outage = OUTAGES["worker-kill"]
    assert outage.description and "worker" in outage.description
    assert outage.spark_workers == 2 and spark_workers_for(["partition", "worker-kill"]) == 2
    assert spark_workers_for(FAULTS[:-1]) == 0
    assert outage.brokers == 1 and brokers_for(["worker-kill", "broker-kill"]) == 3
    options = MatrixOptions(targets=["upsert-sqlite"], points=["sink.mid_write"],
                            faults=["worker-kill"], broker="kafka")
    consumers = {spec.point: spec.mix.consumers for spec in options.specs()}
    assert consumers == {"sink.mid_write": 1, "worker-kill": 2}
    with pytest.raises(ConfigurationError, match="no delta-spark"):
        MatrixOptions(targets=["upsert-delta-spark"], points=(), faults=["worker-kill"],
                      broker="kafka").check()


def test_an_unknown_fault_is_refused_with_the_known_names() -> None:
    with pytest.raises(ConfigurationError, match="unknown fault split-brain") as refused:
        check_faults(["broker-kill", "split-brain"], "kafka")
    assert all(name in str(refused.value) for name in FAULTS)


def test_faults_need_apache_kafka() -> None:
    with pytest.raises(ConfigurationError, match="need --broker kafka") as refused:
        MatrixOptions(faults=["partition"], broker="embedded").check()
    assert all(name in str(refused.value) for name in FAULTS)
    result = CliRunner().invoke(app, ["verify", "--faults", "broker-kill", "--faults-only"])
    assert result.exit_code == 2 and "need --broker kafka" in result.output
    result = CliRunner().invoke(app, ["verify", "--broker", "kafka", "--faults", "nope"])
    assert result.exit_code == 2 and "unknown fault nope" in result.output


def test_fault_cells_sit_beside_the_crash_points_and_crash_nothing() -> None:
    options = MatrixOptions(targets=["upsert-sqlite"], points=["sink.mid_write"],
                            faults=list(BROKER_FAULTS), broker="kafka")
    options.check()
    assert options.cells() == [("upsert-sqlite", "sink.mid_write"),
                               *(("upsert-sqlite", fault) for fault in BROKER_FAULTS)]
    crashes = {spec.point: spec.crashes for spec in options.specs()}
    assert crashes == {"sink.mid_write": 2, **dict.fromkeys(BROKER_FAULTS, 0)}
    only = MatrixOptions(targets=["upsert-sqlite"], points=(), faults=["broker-kill"],
                         broker="kafka")
    assert only.cells() == [("upsert-sqlite", "broker-kill")]
    with pytest.raises(ConfigurationError, match="name --faults"):
        MatrixOptions(points=(), broker="kafka").check()


def test_a_registered_outage_becomes_a_fault_name() -> None:
    class Pause(Outage):
        name = "test-pause"
        description = "nothing at all"
        brokers = 1

        def strike(self, scene: Scene) -> str:
            return "nothing"

        def heal(self, scene: Scene) -> None:
            pass

    from kafka_share_eos.proving_ground.verify.outages import register

    register(Pause)
    try:
        check_faults(["test-pause"], "kafka")
    finally:
        del OUTAGES["test-pause"]


def test_the_stall_is_the_longest_gap_from_the_last_batch_before_the_fault() -> None:
    lines = [
        {"batch": 0, "started": True, "records": [[0, 1]]},
        {"batch": 0, "written": 10, "time": 100.0},
        {"batch": 1, "written": 0, "time": 101.0},  # all redeliveries: applied nothing
        {"batch": 2, "started": True, "records": [[2, 5], [1, 7], [2, 6]]},
        {"batch": 2, "written": 10, "time": 104.0},
        {"batch": 3, "written": 10, "time": 113.5},
        {"batch": 4, "written": 10, "time": 114.0},
    ]
    times = applied_times(lines)
    assert times == [100.0, 104.0, 113.5, 114.0]
    assert stall_seconds(times, fault_at=103.0) == pytest.approx(9.5)
    assert stall_seconds(times, fault_at=99.0) == pytest.approx(9.5)
    assert stall_seconds([120.0], fault_at=110.0) == pytest.approx(10.0)
    assert stall_seconds(times, fault_at=115.0) is None
    assert held_partitions(lines) == [1, 2]
    assert held_batch(lines) == 2
    assert held_partitions([]) == [] and held_batch([]) == -1


def test_the_share_state_partition_follows_kafkas_hash() -> None:
    # Values of Java's "...".hashCode().
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)
    assert java_string_hash("group:AAAAAAAAAHsAAAAAAAAByA:0") == -447898033
    assert share_state_partition("group", "AAAAAAAAAHsAAAAAAAAByA", 0, 5) == 447898033 % 5
    assert share_state_partition("g", "t", 0, 1) == 0


class _Recorder(Outage):
    name = "test-recorder"
    description = "records what the driver asks of it"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def strike(self, scene: Scene) -> str:
        self.calls.append(f"strike {scene.held_partitions}")
        return "recorded"

    def heal(self, scene: Scene) -> None:
        self.calls.append("heal")


def _wait_for(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def test_the_driver_strikes_at_the_hold_opens_the_gate_and_heals_after_a_later_batch(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"
    hold_environment("sink.mid_write", gate)  # makes the gate
    lines: list[dict[str, object]] = [
        {"batch": 0, "started": True, "records": [[1, 0]]},
        {"batch": 0, "written": 1, "time": 1.0},
        {"batch": 1, "started": True, "records": [[2, 3]]},
    ]
    outage = _Recorder()
    scene = Scene(cast(Any, None), "topic", "group", tmp_path)
    driver = FaultDriver(outage, scene, gate, "sink.mid_write", lambda: lines).start()
    try:
        (gate / "sink.mid_write.held").touch()
        _wait_for((gate / "sink.mid_write.release").exists, "the gate never opened")
        assert outage.calls == ["strike [2]"]
        lines.append({"batch": 1, "written": 1, "time": time.time()})  # the held batch ends
        lines.append({"batch": 2, "written": 1, "time": time.time()})  # the stream is back
        _wait_for(lambda: outage.calls[-1] == "heal", "never healed")
    finally:
        driver.stop()
    report = driver.report(9.5)
    assert report["did"] == "recorded" and report["error"] is None
    assert report["stall_seconds"] == 9.5 and report["healed_after_seconds"] is not None
    assert outage.calls == ["strike [2]", "heal"]


def test_a_driver_whose_hold_never_came_strikes_nothing(tmp_path: Path) -> None:
    outage = _Recorder()
    driver = FaultDriver(outage, Scene(cast(Any, None), "t", "g", tmp_path), tmp_path,
                         "sink.mid_write", list).start()
    driver.stop()
    assert outage.calls == [] and driver.report(None)["struck_at"] is None


class _Timed(_Recorder):
    name = "test-timed"
    heal_after_seconds = 0.3


def test_a_timed_outage_heals_after_its_time_without_waiting_for_a_batch(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    hold_environment("sink.mid_write", gate)
    lines = [{"batch": 1, "started": True, "records": [[0, 3]]}]
    outage = _Timed()
    driver = FaultDriver(outage, Scene(cast(Any, None), "t", "g", tmp_path), gate,
                         "sink.mid_write", lambda: lines).start()
    try:
        (gate / "sink.mid_write.held").touch()
        _wait_for(lambda: outage.calls[-1:] == ["heal"], "never healed")
    finally:
        driver.stop()
    assert outage.calls == ["strike [0]", "heal"]
    healed = driver.report(None)["healed_after_seconds"]
    assert healed is not None and healed >= 0.3


class _Workers:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def kill_worker(self, index: int) -> list[int]:
        self.calls.append(f"kill {index}")
        return [10, 11, 12]

    def restart_worker(self, index: int) -> None:
        self.calls.append(f"restart {index}")


def test_the_worker_kill_kills_a_worker_and_restarts_it_and_needs_the_cluster() -> None:
    workers = _Workers()
    outage = OUTAGES["worker-kill"]()
    done = outage.strike(Scene(cast(Any, None), "t", "g", Path(), spark=cast(Any, workers)))
    assert "SIGKILL worker 0" in done and "2 processes" in done
    outage.heal(Scene(cast(Any, None), "t", "g", Path(), spark=cast(Any, workers)))
    assert workers.calls == ["kill 0", "restart 0"]
    with pytest.raises(SparkClusterError, match="Spark standalone cluster"):
        outage.strike(Scene(cast(Any, None), "t", "g", Path()))


class _Proxies:
    def __init__(self) -> None:
        self.nodes = [1, 2, 3]
        self.calls: list[str] = []

    def cut(self, mode: str) -> None:
        self.calls.append(f"cut {mode}")

    def heal(self) -> None:
        self.calls.append("heal")


def test_the_partition_blackholes_every_proxy_and_heals_them() -> None:
    proxies = _Proxies()
    scene = Scene(cast(Any, proxies), "t", "g", Path())
    outage = OUTAGES["partition"]()
    assert "all 3 nodes" in outage.strike(scene)
    outage.heal(scene)
    assert proxies.calls == ["cut blackhole", "heal"]
