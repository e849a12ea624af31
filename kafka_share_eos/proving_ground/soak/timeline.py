"""The soak over time as one SVG chart: records applied per second with each fault marked, and
the pipeline's resident memory and its driver's live heap.

``kafka-share-eos soak --save`` draws it beside the JSON;
``python -m kafka_share_eos.proving_ground.soak.timeline docs/results/soak.json`` draws it
again from a saved run.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_share_eos.proving_ground.soak.verdict import SoakResult
from kafka_share_eos.proving_ground.svg_figure import redraw_each, svg_chart

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SIZE = (11.0, 6.0)
COLOURS = {
    "pipeline-kill": "#c62828", "broker-kill": "#6a1b9a", "postgres-kill": "#1565c0",
    "store-kill": "#4e342e", "store-blackhole": "#ef6c00", "store-503": "#f9a825",
    "delta-maintenance": "#2e7d32",
}


def rates(samples: list[dict[str, float]]) -> tuple[list[float], list[float]]:
    """Minutes and records applied per second between consecutive samples."""
    minutes, per_second = [], []
    for before, after in itertools.pairwise(samples):
        span = after["t"] - before["t"]
        if span > 0:
            minutes.append(after["t"] / 60)
            per_second.append(max(0.0, (after["applied"] - before["applied"]) / span))
    return minutes, per_second


def chart(result: SoakResult) -> str:
    """The SVG text of the soak's chart."""

    def draw(figure: Figure) -> None:
        top, bottom = figure.subplots(2, 1, sharex=True, height_ratios=(3, 2))
        minutes, per_second = rates(result.samples)
        top.plot(minutes, per_second, color="#333333", linewidth=0.8)
        top.set_ylabel("records applied / s")
        seen: set[str] = set()
        for fault in result.fault_log:
            kind = str(fault["kind"])
            top.axvline(float(fault["at"]) / 60, color=COLOURS.get(kind, "#888888"),
                        linewidth=1.2, alpha=0.8, label=None if kind in seen else kind)
            seen.add(kind)
        if seen:
            top.legend(loc="upper left", fontsize=7, ncols=3, frameon=False)
        at = [float(sample["t"]) / 60 for sample in result.samples]
        for process, colour in (("driver", "#1565c0"), ("runners", "#ef6c00")):
            bottom.plot(at, [sample.get(f"rss_{process}", 0.0) for sample in result.samples],
                        color=colour, linewidth=1.0, label=process)
        heap = [(float(sample["t"]) / 60, float(sample["heap_live_mib"]))
                for sample in result.samples if "heap_live_mib" in sample]
        if heap:
            bottom.plot(*zip(*heap, strict=True), color="#2e7d32", linewidth=0, marker=".",
                        markersize=3, label="driver's live heap")
        bottom.set_ylabel("MiB")
        bottom.set_xlabel("minutes")
        bottom.legend(loc="upper left", fontsize=7, frameon=False)

    verdict = "Every check passed." if result.passed else "Failed: " + ", ".join(result.checks)
    return svg_chart(
        "the soak's chart", SIZE,
        f"Soak: {result.minutes:g} minutes, {result.records} records, "
        f"{sum(result.faults.values())} faults, {result.duplicates} duplicates, "
        f"{result.lost} lost",
        f"Records applied per second, each fault marked (above); resident memory of the driver "
        f"and the source runners, and the driver's live heap after a full collection (below). "
        f"{verdict}",
        draw,
    )


def redraw(saved: Path) -> Path:
    """Draw the chart of the result saved at ``saved`` beside it (``.svg``)."""
    out = saved.with_suffix(".svg")
    out.write_text(chart(SoakResult.load(saved)))
    return out


if __name__ == "__main__":
    redraw_each(__doc__.splitlines()[0], redraw)
