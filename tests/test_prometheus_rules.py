"""The alert rules shipped in docs/prometheus/: Prometheus's own promtool (Debian's package,
fetched once) accepts them, and their unit tests (one case per rule) pass."""

from __future__ import annotations

import subprocess
from pathlib import Path

from kafka_share_eos.proving_ground.launchers.prometheus import promtool

RULES = Path(__file__).resolve().parent.parent / "docs" / "prometheus"


def run_promtool(*arguments: str) -> str:
    outcome = subprocess.run([str(promtool()), *arguments], cwd=RULES, capture_output=True,
                             text=True, timeout=120, check=False)
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    return outcome.stdout


def test_promtool_accepts_the_rules() -> None:
    assert "SUCCESS: 4 rules found" in run_promtool("check", "rules", "alerts.yml")


def test_each_rule_fires_on_its_condition_and_not_before() -> None:
    assert "SUCCESS" in run_promtool("test", "rules", "alerts_test.yml")
