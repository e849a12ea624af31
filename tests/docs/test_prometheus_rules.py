"""The alert rules and the Grafana dashboard shipped in docs/prometheus/: Prometheus's own
promtool (Debian's package, fetched once) accepts the rules and the dashboard's queries, the
rules' unit tests (one case per rule) pass, and both use only metrics the endpoint serves."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

from kafka_share_eos.monitoring.families import sample_names
from kafka_share_eos.proving_ground.launchers.prometheus import promtool

RULES = Path(__file__).resolve().parents[2] / "docs" / "prometheus"


def served() -> set[str]:
    return sample_names()


def run_promtool(*arguments: str, cwd: Path = RULES) -> str:
    outcome = subprocess.run([str(promtool()), *arguments], cwd=cwd, capture_output=True,
                             text=True, timeout=120, check=False)
    assert outcome.returncode == 0, outcome.stdout + outcome.stderr
    return outcome.stdout


def test_promtool_accepts_the_rules() -> None:
    assert "SUCCESS: 4 rules found" in run_promtool("check", "rules", "alerts.yml")


def test_each_rule_fires_on_its_condition_and_not_before() -> None:
    assert "SUCCESS" in run_promtool("test", "rules", "alerts_test.yml")


def test_the_rules_use_served_metrics_only() -> None:
    used = set(re.findall(r"\bkafka_share_eos_\w+", (RULES / "alerts.yml").read_text()))
    assert used and used <= served()


def test_the_dashboard_queries_parse_and_use_served_metrics(tmp_path: Path) -> None:
    dashboard = json.loads((RULES / "grafana-dashboard.json").read_text())
    exprs = [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"\bkafka_share_eos_\w+", expr)}
    # The variables' queries too (the pipelines offered in the query picker).
    variables = re.findall(r"\bkafka_share_eos_\w+", json.dumps(dashboard["templating"]))
    assert used and variables and used | set(variables) <= served()
    # Grafana's variables as a dashboard would set them; promtool checks the rest as PromQL.
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel{n}", "expr": expr.replace("$__rate_interval", "5m")
         .replace("$query", ".*")} for n, expr in enumerate(exprs)]}]}
    (tmp_path / "dashboard.yml").write_text(json.dumps(rules))
    assert f"SUCCESS: {len(exprs)} rules found" in run_promtool(
        "check", "rules", "dashboard.yml", cwd=tmp_path)
