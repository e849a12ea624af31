"""Options of the kafka-share source: parsing, defaults and refusals (no broker, no Spark)."""

from __future__ import annotations

import pytest

from kafka_share_eos.source.options import (
    DEFAULT_MAX_POLL_RECORDS,
    AckPolicy,
    LockBudgetAction,
    SourceOptionError,
    SourceOptions,
)

REQUIRED = {
    "kafka.bootstrap.servers": "localhost:9092",
    "kafka.share.group.id": "orders-eos",
    "subscribe": "orders, payments",
    "journalPath": "/tmp/journal",
}


def parse(**extra: str) -> SourceOptions:
    return SourceOptions.parse({**REQUIRED, **extra})


def test_defaults_and_client_config() -> None:
    options = parse(**{"kafka.security.protocol": "SASL_SSL", "kafka.sasl.password": "s3cret"})
    assert options.topics == ("orders", "payments")
    assert options.ack_policy is AckPolicy.AFTER_COMMIT
    assert options.max_records_per_trigger is None
    assert options.include_headers is False
    assert options.lock_duration_ms == 30_000
    assert options.lock_budget_warn_fraction == 0.8
    assert options.lock_budget_action is LockBudgetAction.WARN
    assert dict(options.consumer_config) == {
        "bootstrap.servers": "localhost:9092",
        "group.id": "orders-eos",
        "share.acknowledgement.mode": "explicit",
        "max.poll.records": str(DEFAULT_MAX_POLL_RECORDS),
        "security.protocol": "SASL_SSL",
        "sasl.password": "s3cret",
    }


def test_option_names_are_case_insensitive_and_values_parsed() -> None:
    options = parse(
        MAXRECORDSPERTRIGGER="250", pollTimeoutMs="20", acknowledge="AFTERJOURNAL",
        includeHeaders="True", availablenowidlems="700", LOCKDURATIONMS=" 45000",
        lockbudgetwarnfraction="1", LockBudgetAction="SWITCHTOAFTERJOURNAL",
    )
    assert options.lock_duration_ms == 45_000
    assert options.lock_budget_warn_fraction == 1.0
    assert options.lock_budget_action is LockBudgetAction.SWITCH_TO_AFTER_JOURNAL
    assert options.available_now_idle_ms == 700
    assert options.max_records_per_trigger == 250
    assert options.poll_timeout_ms == 20
    assert options.ack_policy is AckPolicy.AFTER_JOURNAL
    assert options.include_headers is True
    assert options.max_poll_records == 250


def test_after_commit_refuses_a_cap_it_could_not_hold() -> None:
    assert parse(**{"kafka.max.poll.records": "70"}).max_poll_records == 70
    # One poll is one batch there, and Apache Kafka's polls exceed max.poll.records.
    for given in ({}, {"acknowledge": "afterCommit"},
                  {"lockBudgetAction": "switchToAfterJournal"}):
        with pytest.raises(SourceOptionError) as refused:
            parse(maxRecordsPerTrigger="100", **given)
        assert str(refused.value).startswith(
            "option 'maxRecordsPerTrigger' caps a micro-batch only with acknowledge=afterJournal"
        )
        assert "KIP-1206" in str(refused.value) and "kafka.max.poll.records" in str(refused.value)


def test_every_executor_consumer_needs_a_share_of_the_cap() -> None:
    with pytest.raises(SourceOptionError, match=r"'maxRecordsPerTrigger' \(3\).*'consumers' \(4\)"):
        parse(maxRecordsPerTrigger="3", consumers="4", journalPath="/tmp/journal")
    assert parse(maxRecordsPerTrigger="4", consumers="4").slot_records(3) == 1


def test_after_journal_polls_never_exceed_the_batch_limit() -> None:
    assert parse(acknowledge="afterJournal", maxRecordsPerTrigger="100").max_poll_records == 100
    big = parse(acknowledge="afterJournal", maxRecordsPerTrigger="100000")
    assert big.max_poll_records == DEFAULT_MAX_POLL_RECORDS


@pytest.mark.parametrize(
    ("given", "group_config"),
    [
        ("earliest", "earliest"),
        (" LATEST ", "latest"),
        ("PT1H", "by_duration:PT1H"),
        ("p1d", "by_duration:P1D"),
        ("P2DT12H30M", "by_duration:P2DT12H30M"),
        ("PT0.5S", "by_duration:PT0.5S"),
        ("by_duration:PT15M", "by_duration:PT15M"),
    ],
)
def test_starting_offsets_become_the_groups_auto_offset_reset(
    given: str, group_config: str
) -> None:
    options = parse(startingOffsets=given)
    assert options.starting_offsets == group_config
    assert "startingOffsets" in options.given
    assert parse().starting_offsets is None


@pytest.mark.parametrize(
    "given", ["", "earliest,latest", "-PT1H", "PT-1H", "P1W", "P1Y", "P", "PT", "P1DT",
              "PT1H30", "1h", "by_duration:", "by_duration:-PT1H", "none", "PT1.0000000001S"],
)
def test_other_starting_offsets_are_refused_naming_the_accepted_forms(given: str) -> None:
    with pytest.raises(SourceOptionError) as refused:
        parse(startingOffsets=given)
    message = str(refused.value)
    assert "'startingOffsets'" in message and repr(given) in message
    assert all(form in message for form in ("'earliest'", "'latest'", "'PT1H'", "by_duration:"))


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"startingOffsets": '{"orders":{"0":23}}'}, "startingOffsets"),
        ({"startingOffsetsByTimestamp": "{}"}, "startingOffsets"),
        ({"kafka.auto.offset.reset": "earliest"}, "startingOffsets"),
        ({"endingOffsets": "latest"}, "endingOffsets"),
        ({"assign": "{}"}, "assign"),
        ({"subscribePattern": "o.*"}, "subscribePattern"),
        ({"failOnDataLoss": "false"}, "failOnDataLoss"),
        ({"kafka.group.id": "g"}, "kafka.share.group.id"),
        ({"kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
        ({"kafka.share.acknowledgement.mode": "implicit"}, "kafka.share.acknowledgement.mode"),
        ({"maxOffsetsPerTrigger": "5"}, "maxRecordsPerTrigger"),
        ({"maxRecordsPerTrigger": "0"}, "maxRecordsPerTrigger"),
        ({"maxRecordsPerTrigger": "lots"}, "maxRecordsPerTrigger"),
        ({"pollTimeoutMs": "-5"}, "pollTimeoutMs"),
        ({"availableNowIdleMs": "0"}, "availableNowIdleMs"),
        ({"acknowledge": "never"}, "acknowledge"),
        ({"includeHeaders": "yes"}, "includeHeaders"),
        ({"lockDurationMs": "0"}, "lockDurationMs"),
        ({"lockDurationMs": "30s"}, "lockDurationMs"),
        ({"lockBudgetWarnFraction": "0"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "1.5"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "-0.2"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "nan"}, "lockBudgetWarnFraction"),
        ({"lockBudgetWarnFraction": "80%"}, "lockBudgetWarnFraction"),
        ({"lockBudgetAction": "fail"}, "lockBudgetAction"),
        ({"subscribe": " , "}, "subscribe"),
        ({"subscribe": "a,a"}, "subscribe"),
        ({"journalPath": ""}, "journalPath"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_options_are_named(extra: dict[str, str], named: str) -> None:
    with pytest.raises(SourceOptionError, match=named):
        parse(**extra)


@pytest.mark.parametrize("missing", sorted(REQUIRED))
def test_missing_required_options_are_named(missing: str) -> None:
    given = {k: v for k, v in REQUIRED.items() if k != missing}
    with pytest.raises(SourceOptionError, match=missing):
        SourceOptions.parse(given)


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("startingoffest", "startingOffsets"),
        ("maxrecordspertriger", "maxRecordsPerTrigger"),
        ("journalpth", "journalPath"),
        ("consumer", "consumers"),
        ("lockdurationsms", "lockDurationMs"),
    ],
)
def test_a_misspelt_option_names_the_documented_one_as_spark_lowercased_it(
    given: str, meant: str
) -> None:
    with pytest.raises(SourceOptionError) as refused:
        parse(**{given: "1"})
    first_line = str(refused.value).splitlines()[0]
    assert f"{given!r}" in first_line
    assert first_line.endswith(f"did you mean {meant!r}?")


def test_an_option_like_none_points_to_the_documented_list() -> None:
    with pytest.raises(SourceOptionError, match=r"colour.*docs/configuration\.md"):
        parse(colour="blue")
