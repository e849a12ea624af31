"""The soak's figures the guarantees page quotes are those of the committed run,
docs/results/soak.json: the page gives them in one passage, written out here from the file."""

from __future__ import annotations

import json
from typing import Any

from helpers.doc_blocks import ROOT

from kafka_share_eos.proving_ground.soak.strikes import STRIKES

RESULTS = ROOT / "docs" / "results"


def passage(result: dict[str, Any]) -> str:
    """The passage of docs/guarantees.md that gives ``result``, as its words run."""
    faults = ", ".join(f"{result['faults'][kind]} `{kind}`" for kind in STRIKES
                       if result["faults"].get(kind))
    start, end = result["rss_start_mib"], result["rss_end_mib"]
    verdict = ("Every check passed" if result["passed"]
               else "Failed: " + "; ".join(f"{check}: {why}"
                                           for check, why in result["checks"].items()))
    return (
        f"{result['minutes']:g} minutes, {result['records']:,} records, "
        f"{sum(result['faults'].values())} faults ({faults}), {result['duplicates']} "
        f"duplicates and {result['lost']} lost, {result['dead_lettered']} poison records "
        f"dead-lettered, {result['pipeline_starts']} starts of the pipeline "
        f"({result['failed_starts']} of them after a failure). Resident memory after the "
        f"warm-up and at the end: driver {start['driver']} and {end['driver']} MiB, source "
        f"runners {start['runners']} and {end['runners']} MiB. Journal files "
        f"{result['journal_files']['warm_up']:,} and {result['journal_files']['end']:,}, batch "
        f"metrics {result['journal_metrics']['warm_up']:,} and "
        f"{result['journal_metrics']['end']:,}, ledger rows {result['ledger_rows']['warm_up']:,} "
        f"and {result['ledger_rows']['end']:,}. {verdict}."
    )


def test_the_guarantees_page_gives_the_committed_soaks_figures() -> None:
    result = json.loads((RESULTS / "soak.json").read_text())
    page = " ".join((ROOT / "docs" / "guarantees.md").read_text().split())

    assert passage(result) in page


def test_the_committed_soak_ran_an_hour_of_every_fault_kind_with_its_chart() -> None:
    result = json.loads((RESULTS / "soak.json").read_text())

    assert result["minutes"] >= 60
    assert set(result["faults"]) == set(STRIKES)
    chart = (RESULTS / "soak.svg").read_text()
    assert f"{result['records']} records" in chart
