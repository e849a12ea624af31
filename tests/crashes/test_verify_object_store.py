"""``kafka-share-eos verify --storage s3``: every durable path of the verifier's pipelines is on
an object store started for the run (journals, Spark checkpoints through s3a, the dedup ledger,
the two-phase decision logs, Delta targets and dead letters), the pipelines are crashed inside
their executor consumers, and every record lands once.

The store's credentials reach the pipelines through their environment only: no file of the run
holds them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.s3_server import SECRET_KEY
from kafka_share_eos.proving_ground.verify import MatrixOptions

pytestmark = pytest.mark.timeout(600)

# slot.after_segment with every path on S3 and on Azure Blob: tests/crashes/test_drain.py.
POINTS = ["slot.during_ack"]
STRATEGIES = ["dedup-delta", "two-phase"]


def test_executor_consumers_with_every_path_on_s3_are_exactly_once(tmp_path: Path) -> None:
    work = tmp_path / "work"
    outcome = CliRunner().invoke(app, [
        "verify", "--storage", "s3", "--strategy", ",".join(STRATEGIES),
        "--crash-points", ",".join(POINTS), "--consumers", "2", "--records", "20",
        "--crashes-per-run", "1", "--parallel", "2", "--seed", "23", "--workdir", str(work),
        "--json",
    ])

    assert outcome.exit_code == 0, outcome.output
    report = json.loads(outcome.stdout)
    assert {
        (cell["strategy"], cell["crash_point"]): (
            cell["ok"], cell["crashes"], cell["records"], cell["duplicates"], cell["losses"],
            cell["errors"])
        for cell in report["cells"]
    } == {(strategy, point): (True, 1, 20, 0, 0, [])
          for strategy in STRATEGIES for point in POINTS}
    configs = sorted(work.glob("*/config.json"))
    assert len(configs) == len(POINTS) * len(STRATEGIES)
    for config in configs:
        saved = config.read_text()
        assert json.loads(saved)["store_root"].startswith("s3://")
        assert SECRET_KEY not in saved
        # Nothing durable on local disk: logs and progress lines only.
        assert not list(config.parent.glob("pipeline-*/journal"))
        assert not list(config.parent.glob("pipeline-*/checkpoint"))
        assert not list(config.parent.glob("pipeline-*/decisions"))
        assert not {"ledger", "effects-delta", "dead-letters.db"} & {
            path.name for path in config.parent.iterdir()}
    # The report's records per consumer slot were read back from the store's journals.
    for cell in report["cells"]:
        (run,) = cell["run_details"]
        assert sum(slot["records"] for slot in run["consumers"]) > 0, run["consumers"]


def test_an_unknown_storage_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="unknown storage 'gcs'; choose from local, s3"):
        MatrixOptions(storage="gcs").check()  # type: ignore[arg-type]

    outcome = CliRunner().invoke(app, ["verify", "--storage", "gcs"])
    assert outcome.exit_code == 2
    assert "unknown storage 'gcs'" in outcome.output
