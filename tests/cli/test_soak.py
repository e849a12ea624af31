"""``kafka-share-eos soak``'s options: an unknown fault kind is refused before anything
starts."""

from __future__ import annotations

from typer.testing import CliRunner

from kafka_share_eos.cli.main import app


def test_an_unknown_fault_kind_is_refused_naming_the_known_ones() -> None:
    outcome = CliRunner().invoke(app, ["soak", "--minutes", "1", "--faults",
                                       "pipeline-kill,store-melt"])

    assert outcome.exit_code == 2
    assert "unknown soak fault store-melt" in outcome.output
    assert "delta-maintenance" in outcome.output
