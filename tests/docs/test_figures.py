"""The benchmark ratios the README and the docs quote are those of the latest full run,
docs/results/benchmarks.json, and so are the targets they give: each figure is tied to its row
by a pattern below, and a figure no pattern ties to a row fails the test."""

# ruff: noqa: RUF001, RUF003 - the docs write ratios with the multiplication sign

from __future__ import annotations

import json
import re

import pytest
from helpers.doc_blocks import ROOT, documents

RESULTS = json.loads((ROOT / "docs" / "results" / "benchmarks.json").read_text())
RATIOS = RESULTS["ratios"]
FIGURE = re.compile(r"(\d+\.\d+)\s?[×x](?![\w])")

ROWS = {
    "aC": "Spark query, afterCommit, stream rate vs raw ShareConsumer loop",
    "aJ": "Spark query, afterJournal, stream rate vs raw ShareConsumer loop",
    "plan": "planning path without Spark vs raw consumer",
    "c2": "consumers=2 vs 1, records per second",
    "c2raw": "consumers=2 vs 2 raw ShareConsumer processes, records per second",
    "c2cpu": "consumers=2 vs 1, driver CPU per micro-batch",
    "c4": "consumers=4 vs 1, records per second",
    "c4raw": "consumers=4 vs 4 raw ShareConsumer processes, records per second",
    "c4cpu": "consumers=4 vs 1, driver CPU per micro-batch",
    "e2eP": "end-to-end upsert, Postgres: exactly once vs at least once",
    "e2eD": "end-to-end upsert, Delta: exactly once vs at least once",
    "e2eDD": "end-to-end dedup: exactly once vs at least once",
    "e2e2P": "end-to-end two-phase: exactly once vs at least once",
    "e2eI": "end-to-end upsert, Iceberg: exactly once vs at least once",
    "memR": "runner resident memory over 200 batches: last vs batch 20",
    "memD": "driver resident memory over 200 batches: last vs batch 20",
    "upN": "Postgres upsert, new keys vs COPY append",
    "up10": "Postgres upsert, 10% already applied vs COPY append",
    "upA": "Postgres upsert, all already applied vs COPY append",
    "upD": "Delta upsert (new keys appended, existing keys merged) vs Delta append",
    "tpS": "two-phase, Postgres set-based effect vs upsert sink",
    "tpD": "two-phase, Postgres + Delta, set-based effect vs upsert sink",
    "tpR": "two-phase, Postgres per-record SQL effect vs upsert sink",
    "tpA": "two-phase, Postgres per-record SQL effect vs the same statements at least once",
    "dd1": "dedup store vs Delta append, 1k-row batches",
    "dd10": "dedup store vs Delta append, 10k-row batches",
    "g1M": "ledger growth: batch cost at 1M vs 10k identities",
    "g10M": "ledger growth: batch cost at 10M vs 10k identities",
    "ktS": "Kafka topic sink vs idempotent producer, 10k-record batches",
    "ktE": "end-to-end Kafka topic: exactly once vs at least once",
    "kpS": "kafka-share source, afterJournal, stream rate vs raw ShareConsumer loop, Apache Kafka",
    "kpQ": "raw share-group loop vs raw consumer-group loop, Apache Kafka",
    "kpC2": "consumers=2 vs 2 raw ShareConsumer processes, records per second, Apache Kafka",
    "kpC4": "consumers=4 vs 4 raw ShareConsumer processes, records per second, Apache Kafka",
    "kpP": "end-to-end upsert, Postgres: kafka-share exactly once vs Spark's Kafka source at least "
           "once",
    "kpD": "end-to-end upsert, Delta: kafka-share exactly once vs Spark's Kafka source at least "
           "once",
    "kpDD": "end-to-end dedup: kafka-share exactly once vs Spark's Kafka source at least once",
    "kp2P": "end-to-end two-phase: kafka-share exactly once vs Spark's Kafka source at least once",
    "ds20k": "delta-spark upsert (MERGE) vs delta-spark append, 20k rows",
    "ds1M": "delta-spark upsert (MERGE) vs delta-spark append, 1M rows",
    "rs20k": "delta-rs upsert (driver) vs delta-spark upsert, 20k rows",
    "rs1M": "delta-rs upsert (driver) vs delta-spark upsert, 1M rows",
    "ms": "end-to-end upsert, Postgres, exactly once: metrics served vs not",
    "cn": "end-to-end upsert, Postgres, exactly once: Spark Connect session vs classic session",
    "os1": "consumers=1, journal on S3 vs local journal, records per second",
    "os4": "consumers=4, journal on S3 vs local journal, records per second",
    "osdd": "dedup store on S3 vs S3 Delta append, 10k-row batches",
    "ktS0": "Kafka topic sink, source_header=False, vs idempotent producer, 10k-record batches",
    "kpJ": "start() to first record: kafka-share query vs raw ShareConsumer subscribe to first "
           "record, Apache Kafka",
    "kpK": "Kafka topic sink exactly once vs Spark's Kafka sink at least once, kafka-share source",
    **{f"kpL{key}": f"end-to-end {name}: kafka-share exactly once vs Spark's Kafka source at "
                    "least once, 1M records"
       for key, name in (("P", "upsert, Postgres"), ("D", "upsert, Delta"), ("DD", "dedup"),
                         ("2P", "two-phase"))},
    "dsU20k": "delta-spark upsert vs Delta's documented idempotent foreachBatch MERGE, 20k rows",
    "dsU1M": "delta-spark upsert vs Delta's documented idempotent foreachBatch MERGE, 1M rows",
    **{f"ic{kind}{peer}": f"Iceberg upsert, 10% {name} vs pyiceberg {against}"
       for kind, name in (("A", "already applied"), ("N", "newer versions"))
       for peer, against in (("a", "append"), ("u", "Table.upsert"))},
    "icDD": "dedup store into Iceberg vs Iceberg append, 10k-row batches",
}
# Rows a range ("0.95–1.03×") spans: it must run from the lowest to the highest of them.
RANGES = {"e2e": ["e2eP", "e2eD", "e2eDD", "e2e2P", "e2eI"], "tpSD": ["tpD", "tpS"],
          "kpP": ["kpP", "kpD", "kpDD", "kp2P"], "kpL": ["kpLP", "kpLD", "kpLDD", "kpL2P"]}
# Figures a row gives in its detail rather than as its value.
DETAILS = {"aJstart": ("aJ", r"from start\(\) to the last record (\d\.\d+)x"),
           "aCstart": ("aC", r"from start\(\) to the last record (\d\.\d+)x")}

# Group names say what a figure is: v_<row> its value, t_<row> its target, lo_/hi_<range> the
# ends of a range, d_<detail> a figure of a row's detail.
X = r"(?P<{}>\d+\.\d+)\s?×"
TIED: dict[str, list[str]] = {
    "checkpoint-dedup.md": [
        r"\| 1 000 records \| {} \| ≥ {} \|".format(X.format("v_dd1"), X.format("t_dd1")),
        r"\| 10 000 records \| {} \| ≥ {} \|".format(X.format("v_dd10"), X.format("t_dd10")),
        r"{} at 1M and {} at 10M identities against 10k\s+\(target ≤ {}\)".format(
            X.format("v_g1M"), X.format("v_g10M"), X.format("t_g1M")),
    ],
    "choose-strategy.md": [
        r"{} a plain `COPY` for new rows \| (?P<lo_tpSD>\d\.\d+)–{} the upsert sink \(set-based "
        r"effect\) \| {} a plain Delta append".format(
            X.format("v_upN"), X.format("hi_tpSD"), X.format("v_dd10")),
        *(rf"{label} \| {X.format('v_' + key)}(?: \(missed\))? \| ≥ {X.format('t_' + key)}"
          for label, key in [
              (r"Postgres, new keys vs `COPY` append", "upN"),
              (r"10 % already applied vs `COPY` append", "up10"),
              (r"all already applied vs `COPY` append", "upA"),
              (r"Delta \(new keys appended\) vs append", "upD"),
              (r"2PC, Postgres, set-based effect vs upsert sink", "tpS"),
              (r"Postgres \+ Delta, set-based effect vs upsert sink", "tpD"),
              (r"per-record SQL effect vs the same statements at least once", "tpA"),
              (r"10k-record batches \(1 KB values\)", "dd10"),
              (r"1k-record batches", "dd1"),
          ]),
        r"per-record SQL effect vs upsert sink \| {} \| none".format(X.format("v_tpR")),
        r"each strategy \| (?P<lo_e2e>\d\.\d+)–{} \| ≥ {}".format(
            X.format("hi_e2e"), X.format("t_e2eP")),
        r"each strategy, Apache Kafka \| (?P<lo_kpP>\d\.\d+)–{} \(missed\) \| ≥ {}".format(
            X.format("hi_kpP"), X.format("t_kpP")),
        *(rf"\| {size} rows \| {X.format('v_ds' + size)}(?: \(missed\))? \| "
          rf"≥ {X.format('t_ds' + size)} \| {X.format('v_rs' + size)} \| "
          rf"{X.format('v_dsU' + size)} \| ≥ {X.format('t_dsU' + size)} \|"
          for size in ("20k", "1M")),
        r"the same at 1M records \| (?P<lo_kpL>\d\.\d+)–{} \(missed\) \| ≥ {}".format(
            X.format("hi_kpL"), X.format("t_kpLP")),
    ],
    "operations.md": [
        # The latest full run: what it met.
        r"planning\s+path without Spark \({}, met".format(X.format("v_plan")),
        r"driver CPU per micro-batch\s+\({} at 4 consumers against 1\)".format(X.format("v_c4cpu")),
        r"every end-to-end row\s+\((?P<lo_e2e>\d\.\d+)-{}\), memory".format(X.format("hi_e2e")),
        r"writing a Kafka topic \({}\)".format(X.format("v_ktE")),
        r"two raw ShareConsumer processes on Apache\s+Kafka \({}, met".format(X.format("v_kpC2")),
        r"already applied \({}\)".format(X.format("v_up10")),
        r"set-based effect \({}\)".format(X.format("v_tpS")),
        r"against the same\s+statements at least once \({}\)".format(X.format("v_tpA")),
        r"10k-row batches \({};".format(X.format("v_dd10")),
        # What it missed.
        r"`afterCommit` {},\s+`afterJournal` {}\)".format(X.format("v_aC"), X.format("v_aJ")),
        r"against one consumer\s+\({} at 2, {} at 4\)".format(X.format("v_c2"), X.format("v_c4")),
        r"as many raw ShareConsumer\s+processes \({} at 2, met, {} at 4; on Apache Kafka {} at "
        r"4\)".format(X.format("v_c2raw"), X.format("v_c4raw"), X.format("v_kpC4")),
        r"Postgres and Delta \({}\)".format(X.format("v_tpD")),
        r"an idempotent producer \({}\), also with `source_header=False` \({}\);".format(
            X.format("v_ktS"), X.format("v_ktS0")),
        r"loop\s+on Apache Kafka \({}\);".format(X.format("v_kpS")),
        r"`format\(\"kafka\"\)` at 100 000 records \((?P<lo_kpP>\d\.\d+)-{}\) and at 1M records "
        r"\((?P<lo_kpL>\d\.\d+)-{}\); the dedup store at 1k-row batches \({}\)".format(
            X.format("hi_kpP"), X.format("hi_kpL"), X.format("v_dd1")),
        r"`start\(\)` to the first record against a raw `ShareConsumer`'s \({}\)".format(
            X.format("v_kpJ")),
        r"`KafkaTopicSink` against Spark's\s+Kafka sink behind the same query \({}, a".format(
            X.format("v_kpK")),
        r"against Delta's documented idempotent MERGE \({} at 20k rows, {} at 1M\)".format(
            X.format("v_dsU20k"), X.format("v_dsU1M")),
        r"its\s+own append \({} at 20k rows and {} at 1M\)".format(
            X.format("v_ds20k"), X.format("v_ds1M")),
        # Without a target.
        r"against the upsert sink \({}\), a raw share-group loop against a raw consumer-group loop "
        r"on\s+Apache Kafka \({},".format(X.format("v_tpR"), X.format("v_kpQ")),
        r"delta-spark's upsert\s+\({} at 20k rows, {} at 1M\)".format(
            X.format("v_rs20k"), X.format("v_rs1M")),
        # The rows of a run of their own.
        r"local journal \({} at `consumers`=1, {} at 4\)".format(
            X.format("v_os1"), X.format("v_os4")),
        r"S3 Delta append \({}\)\.".format(X.format("v_osdd")),
        r"metrics served against without\s+\({};".format(X.format("v_ms")),
        r"\*\*metrics served vs not\*\* \({}, met in".format(X.format("v_ms")),
        r"scraped every second\) vs not \| ≥ {} \|".format(X.format("t_ms")),
        r"`consumers`=1 and 4 \| ≥ {}, ≥ {} \|".format(X.format("t_os1"), X.format("t_os4")),
        r"at 10k rows a batch \| ≥ {} \|".format(X.format("t_osdd")),
        *(rf"{label} \| [≥≤] {X.format('t_' + key)} \|" for label, key in [
            (r"`afterJournal`, stream rate vs raw ShareConsumer loop", "aJ"),
            (r"`afterCommit`, stream rate vs raw ShareConsumer loop", "aC"),
            (r"planning path without Spark vs raw consumer", "plan"),
            (r"from a Spark Connect client vs in a classic session, same machine", "cn"),
            (r"as many raw ShareConsumer processes, records per second", "c2raw"),
            (r"driver CPU per micro-batch \(it replaced driver CPU per record\)", "c4cpu"),
            (r"the same pipeline at least once", "e2eP"),
            (r"last vs batch 20", "memR"),
            (r"Kafka topic sink vs idempotent producer, 10k-record batches", "ktS"),
            (r"`source_header=False` vs idempotent producer, 10k-record batches", "ktS0"),
            (r"Spark's `format\(\"kafka\"\)` at least once into the same sink, 1M records",
             "kpLP"),
            (r"vs a raw `ShareConsumer` from `subscribe` to its first record", "kpJ"),
            (r"`KafkaTopicSink` exactly once vs Spark's Kafka sink at least once", "kpK"),
            (r"Delta's documented idempotent foreachBatch MERGE, 20k and 1M rows", "dsU20k"),
            (r"end-to-end Kafka topic: exactly once vs at least once", "ktE"),
            (r"stream rate vs raw ShareConsumer loop, Apache Kafka", "kpS"),
            (r"as many raw ShareConsumer processes, Apache Kafka", "kpC2"),
            (r"as many raw ShareConsumer processes, Apache Kafka", "kpC4"),
            (r"at least once into the same sink", "kpP"),
            (r"Postgres upsert, new keys vs `COPY` append", "upN"),
            (r"10 % already applied vs `COPY` append", "up10"),
            (r"all already applied vs `COPY` append", "upA"),
            (r"vs Delta append", "upD"),
            (r"two-phase, Postgres set-based effect vs upsert sink", "tpS"),
            (r"Postgres \+ Delta, set-based effect vs upsert sink", "tpD"),
            (r"per-record SQL effect vs the same statements at least once", "tpA"),
            (r"dedup store vs Delta append, 10k-row batches", "dd10"),
            (r"1k-row batches", "dd1"),
            (r"at 1M and 10M vs 10k identities", "g10M"),
            (r"delta-spark append, 20k and 1M rows", "ds20k"),
            (r"delta-spark append, 20k and 1M rows", "ds1M"),
            (r"10 % newer versions, vs pyiceberg append", "icAa"),
            (r"dedup store into Iceberg vs Iceberg append, 10k-row batches", "icDD"),
        ]),
        r"slots that took records \| ≥ {}, every slot".format(X.format("t_c2")),
        # Where the time goes.
        r"without Spark\*\* \({}, met in".format(X.format("v_plan")),
        r"set-based row met in\s+the latest full run \({}:".format(X.format("v_tpD")),
        r"at least once instead \({} in\s+the latest full run".format(X.format("v_tpA")),
        r"the {} measured \(15\.3 against 5\.8 ms".format(X.format("v_dd1")),
        r"meets its {} target when appends are\s+slow \({} in the latest".format(
            X.format("t_dd10"), X.format("v_dd10")),
        r"with two\s+\({}\), 11 101 with four \({}\)".format(X.format("v_c2"), X.format("v_c4")),
        r"the rows against them are {} \(met\) and {}".format(
            X.format("v_c2raw"), X.format("v_c4raw")),
        r"332\.1 with four \({},".format(X.format("v_c4cpu")),
        r"38 758, so {} \(missed\) and {} \(missed".format(X.format("v_kpC2"), X.format("v_kpC4")),
        r"already applied\*\* \({}, met in".format(X.format("v_up10")),
        r"idempotent producer\*\* \({}, missed".format(X.format("v_ktS")),
        r"\(\*kafka peers\*, {}, missed\)".format(X.format("v_kpS")),
        r"\(\*kafka peers\*, (?P<lo_kpP>\d\.\d+)-{},".format(X.format("hi_kpP")),
        r"its own append\*\* \({} at 20k rows and {} at 1M".format(
            X.format("v_ds20k"), X.format("v_ds1M")),
        r"\*\*The join, measured\*\* \({} in the latest full run".format(X.format("v_kpJ")),
        r"`source_header=False` 47\.4 ms \({}, missed too".format(X.format("v_ktS0")),
        r"check can reach {};".format(X.format("t_ds1M")),
        r"`txnAppId`/`txnVersion`; target {}\): met".format(X.format("t_dsU20k")),
        r"met in the latest full run, {} its rate at 20k rows \(7 514 against 6 243 rows/s\) and "
        r"{} at 1M".format(X.format("v_dsU20k"), X.format("v_dsU1M")),
        r"vs Spark's Kafka sink\*\* \(\*kafka peers\*, {} in the latest full run".format(
            X.format("v_kpK")),
        r"at {} \(upsert, Postgres: 26 541 against 39 672 records/s\), {} \(upsert, "
        r"Delta: 26 080 against 45 143\), {} \(dedup\) and {} \(two-phase\)".format(
            *(X.format(f"v_kpL{key}") for key in ("P", "D", "DD", "2P"))),
    ],
    "source.md": [
        r"planning path without Spark \| {} \| ≥ {}".format(X.format("v_plan"), X.format("t_plan")),
        r"`afterJournal`, stream rate \| {} \| ≥ {}".format(X.format("v_aJ"), X.format("t_aJ")),
        r"`afterCommit`, stream rate \| {} \| ≥ {}".format(X.format("v_aC"), X.format("t_aC")),
        r"`afterJournal`, from `start\(\)` to the last record \| {}".format(X.format("d_aJstart")),
        r"`afterCommit`, from `start\(\)` to the last record \| {}".format(X.format("d_aCstart")),
        r"`afterJournal` ≥ {} the raw loop, `afterCommit` ≥ {}".format(
            X.format("t_aJ"), X.format("t_aC")),
        r"\({} and {}\)".format(X.format("v_aJ"), X.format("v_aC")),
        *(rf"\| {n} \| [\d ]+ \| {X.format('v_c' + n)} \| {X.format('v_c' + n + 'raw')} "
          rf"\([\d ]+\) \| \d+ \| [\d.]+ ms \| {X.format('v_c' + n + 'cpu')} \|"
          for n in ("2", "4")),
        r"records per second\s+≥ (?P<t_c4>\d+)× one consumer's, missed; ≥ {} as many bare".format(
            X.format("t_c2raw")),
        r"at four consumers ≤ {} one consumer's \(flat\), met".format(X.format("t_c4cpu")),
        r"`ShareConsumer` loop \(target ≥ {}\)".format(X.format("t_kpS")),
        r"the query {} the\s+raw loop \(74 794 against 93 410".format(X.format("v_kpS")),
        r"the share-group loop {} the".format(X.format("v_kpQ")),
        r"they reach {}, which meets the {} target, and\s+{}, which misses it".format(
            X.format("v_kpC2"), X.format("t_kpC2"), X.format("v_kpC4")),
    ],
    "two-phase-commit.md": [
        r"target ≥ {} its rows per second".format(X.format("t_tpA")),
        r"measured {} \(87 661 against".format(X.format("v_tpA")),
    ],
    "kafka-topic.md": [
        r"the quiet full run has missed it \({}: 60\.7 against 32\.2 ms a batch, and {} "
        r"without the header\)".format(X.format("v_ktS"), X.format("v_ktS0")),
        r"the default sink is at its target's edge: {} in the latest full run".format(
            X.format("v_kpK")),
        r"the same 10k-record batches \| {} \([^)]*\) \| ≥ {} \|".format(
            X.format("v_ktS"), X.format("t_ktS")),
        r"with the plain producer \| {} \(median of 3 rounds\) \| ≥ {} \|".format(
            X.format("v_ktE"), X.format("t_ktE")),
    ],
    "iceberg.md": [
        *(rf"\| Iceberg upsert, 10 % {name}, vs {against} \| ≥ (?P<t_ic{key}>\d+(?:\.\d+)?)× \| "
          rf"{X.format('v_ic' + key)}, (?:met|missed) \|"
          for name, kind in (("already applied", "A"), ("newer versions", "N"))
          for against, peer in (("pyiceberg append", "a"), ("pyiceberg's `Table.upsert`", "u"))
          for key in [kind + peer]),
        r"\| dedup store into Iceberg vs Iceberg append, 10k-row batches \| ≥ {} \| "
        r"{}, (?:met|missed) \|".format(X.format("t_icDD"), X.format("v_icDD")),
        # The end-to-end rows share one target.
        r"end-to-end upsert, Iceberg: exactly once vs at least once \| ≥ {} \| {}, met \|".format(
            X.format("t_e2eP"), X.format("v_e2eI")),
    ],
    "strategies.md": [
        rf"\| PostgreSQL, new keys \|[^|]*\|[^|]*\| {X.format('v_upN')} \|",
        rf"\| PostgreSQL, 10 % already applied \|[^|]*\|[^|]*\| {X.format('v_up10')} \|",
        rf"\| PostgreSQL, all already applied \|[^|]*\|[^|]*\| {X.format('v_upA')} \|",
        rf"\| Delta, 20 000-row batches[^|]*\|[^|]*\|[^|]*\| {X.format('v_upD')} \|",
    ],
}


def _flowing(pattern: str) -> str:
    """``pattern`` with each space matching any run of whitespace, so that a paragraph's figures
    stay tied when its lines are wrapped anew."""
    return pattern.replace(" ", r"\s+")


def _row(key: str) -> dict[str, object]:
    (row,) = (r for r in RATIOS if r["name"] == ROWS[key])
    return dict(row)


def _expected(group: str) -> float:
    kind, key = group.split("_", 1)
    if kind == "v":
        return float(str(_row(key)["value"]))
    if kind == "t":
        return float(re.sub(r"[^\d.]", "", str(_row(key)["target"])))
    if kind in ("lo", "hi"):
        values = [float(str(_row(k)["value"])) for k in RANGES[key]]
        return min(values) if kind == "lo" else max(values)
    row, pattern = DETAILS[key]
    found = re.search(pattern, str(_row(row)["detail"]))
    assert found, f"the detail of {ROWS[row]!r} no longer gives {pattern}"
    return float(found.group(1))


def _shown(text: str, value: float) -> str:
    """``value`` written with as many decimals as the page's ``text`` has."""
    decimals = len(text.partition(".")[2])
    return f"{value:.{decimals}f}"


@pytest.mark.parametrize("page", sorted(TIED))
def test_each_figure_tied_to_a_benchmark_row_is_that_rows_latest_value_or_target(
    page: str,
) -> None:
    text = (ROOT / "docs" / page).read_text()
    wrong = []
    for pattern in TIED[page]:
        matches = list(re.finditer(_flowing(pattern), text))
        assert matches, f"{page}: no figure matches {pattern!r} any more"
        for match in matches:
            for group, figure in match.groupdict().items():
                if _shown(figure, _expected(group)) != figure:
                    wrong.append(f"{figure} for {group} (latest: {_expected(group)})")
    assert not wrong, f"{page}: {wrong}"


def test_every_ratio_the_docs_quote_is_tied_to_a_benchmark_row() -> None:
    loose = []
    for path in documents():
        text = path.read_text()
        tied = {
            match.start(group)
            for pattern in TIED.get(path.name, [])
            for match in re.finditer(_flowing(pattern), text)
            for group in match.groupdict()
        }
        loose += [f"{path.name}: {m.group(0)!r} in {text[max(0, m.start() - 60):m.end()]!r}"
                  for m in FIGURE.finditer(text) if m.start(1) not in tied]
    assert not loose, "quote these from docs/results/benchmarks.json or drop them:\n" + "\n".join(
        loose)


def test_the_figures_are_checked_against_a_complete_full_run() -> None:
    assert RESULTS["sizes"]["source_records"] >= 600_000  # a full run, not --quick
    assert not RESULTS["failures"]
    assert set(ROWS.values()) <= {row["name"] for row in RATIOS}
    assert not RESULTS["not_run"]
    kafka_topic = RESULTS["results"]["kafka-topic"]
    assert kafka_topic["sink"]["batches"] >= 15 and len(kafka_topic["rounds"]) >= 3
