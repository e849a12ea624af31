"""The vocabulary of two-phase commit: names usable in transaction ids, tokens and decisions that
survive their JSON form, a first-writer-wins store that returns the stored decision, and the
protocols real participants and logs satisfy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_share_eos.errors import ConfigurationError, UnsupportedFormatError
from kafka_share_eos.twophase import FileDecisionLog
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.postgres import PostgresParticipant
from kafka_share_eos.twophase.protocol import (
    Decision,
    DecisionLog,
    Outcome,
    Participant,
    Token,
    Transaction,
    TwoPhaseCommitError,
    app_of,
    check_name,
    store_first,
    txid_prefix,
)


@pytest.mark.parametrize("name", ["a", "app_1", "Pay-Ments", "x" * 64])
def test_names_of_letters_digits_underscores_and_dashes_are_accepted(name: str) -> None:
    assert check_name("app_id", name) == name


@pytest.mark.parametrize("name", ["", "x" * 65, "has:colon", "has space", "dot.ted", "é"])
def test_names_that_could_break_a_transaction_id_are_refused_by_kind(name: str) -> None:
    with pytest.raises(ConfigurationError, match=r"^app_id must be 1-64 characters"):
        check_name("app_id", name)


def test_a_transaction_id_carries_its_app_id_and_batch_id_and_is_unique() -> None:
    first = Transaction.new("payments", 12, ["topic", "partition", "offset"])
    again = Transaction.new("payments", 12, ("topic", "partition", "offset"))

    assert txid_prefix("payments") == "kse:payments:"
    assert first.txid.startswith("kse:payments:12:")
    assert len(first.txid.split(":")[3]) == 12
    assert app_of(first.txid) == "payments"
    assert (first.app_id, first.batch_id, first.key_columns) == (
        "payments", 12, ("topic", "partition", "offset"))
    assert first.txid != again.txid
    with pytest.raises(ConfigurationError, match="app_id"):
        txid_prefix("pay:ments")


def test_a_token_survives_its_json_form_and_tells_apart_the_same_work() -> None:
    token = Token("postgres", "kse:a:1:abc", 3, {"gid": "kse:a:1:abc:postgres", "xid": "7"}, "p2a0")
    back = Token.from_json(json.loads(json.dumps(token.to_json())))

    assert back == token
    # An older token without the optional fields reads with their defaults.
    assert Token.from_json({"participant": "delta", "txid": "kse:a:1:abc"}) == Token(
        "delta", "kse:a:1:abc", 0, {}, "")
    assert token.same_work(Token("postgres", "kse:a:1:abc", part="p2a0"))
    assert not token.same_work(Token("postgres", "kse:a:1:abc", part="p2a1"))
    assert not token.same_work(Token("delta", "kse:a:1:abc", part="p2a0"))
    assert not token.same_work(Token("postgres", "kse:a:2:abc", part="p2a0"))


def test_a_decision_survives_its_json_form_with_its_format_version() -> None:
    tokens = (Token("postgres", "kse:a:5:f00", 2, {"gid": "g"}), Token("delta", "kse:a:5:f00", 2))
    decision = Decision("kse:a:5:f00", 5, Outcome.COMMIT, tokens)
    text = decision.to_json_text()

    assert json.loads(text)["format"] == 1 and json.loads(text)["outcome"] == "commit"
    assert Decision.from_json_text(text, where="test") == decision


def test_a_decision_of_a_later_format_is_refused_with_where_it_was_read() -> None:
    value = json.loads(Decision("kse:a:5:f00", 5, Outcome.ABORT, ()).to_json_text())
    value["format"] = 2
    with pytest.raises(UnsupportedFormatError, match=r"decision at log/kse=a.*format '2'"):
        Decision.from_json_text(json.dumps(value), where="log/kse=a")


def test_an_abort_decision_written_for_another_process_holds_the_batch_and_no_tokens() -> None:
    decision = Decision.abort("kse:orders:41:0a1b2c")

    assert (decision.txid, decision.batch_id, decision.outcome, decision.tokens) == (
        "kse:orders:41:0a1b2c", 41, Outcome.ABORT, ())


def test_only_a_commit_decision_names_the_token_it_commits() -> None:
    logged = Token("postgres", "kse:a:1:abc", 4, {"gid": "g", "xid": "9"}, "p0a0")
    recovered = Token("postgres", "kse:a:1:abc", 0, {"gid": "g"}, "p0a0")
    commit = Decision("kse:a:1:abc", 1, Outcome.COMMIT, (logged,))

    # The logged token, complete, stands for the less complete one recovery found.
    assert commit.committed_token(recovered) == logged
    assert commit.committed_token(Token("postgres", "kse:a:1:abc", part="p1a0")) is None
    assert Decision("kse:a:1:abc", 1, Outcome.ABORT, (logged,)).committed_token(recovered) is None


def test_store_first_returns_the_decision_it_stored_or_the_one_stored_before() -> None:
    ours = Decision("kse:a:3:abc", 3, Outcome.COMMIT, ())
    theirs = Decision.abort("kse:a:3:abc")

    assert store_first(ours, lambda: True, lambda: None) is ours
    assert store_first(ours, lambda: False, lambda: theirs) is theirs


def test_store_first_tries_again_when_the_stored_decision_vanished_before_it_was_read() -> None:
    ours = Decision("kse:a:3:abc", 3, Outcome.COMMIT, ())
    created = iter([False, True])
    reads: list[str] = []

    def read() -> Decision | None:
        reads.append("read")
        return None

    assert store_first(ours, lambda: next(created), read) is ours
    assert reads == ["read"]


def test_store_first_gives_up_naming_the_app_id_when_the_decision_vanishes_three_times() -> None:
    attempts: list[int] = []

    def create() -> bool:
        attempts.append(1)
        return False

    with pytest.raises(TwoPhaseCommitError, match=r"deleted three times.*app_id 'orders'"):
        store_first(Decision.abort("kse:orders:3:abc"), create, lambda: None)
    assert len(attempts) == 3


def test_a_file_decision_log_keeps_the_first_decision_through_store_first(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path / "log"))
    commit = Decision("kse:a:3:abc", 3, Outcome.COMMIT, (Token("p", "kse:a:3:abc", 1),))

    assert log.write(commit) == commit
    assert log.write(Decision.abort("kse:a:3:abc")) == commit
    assert log.read("kse:a:3:abc") == commit


def test_the_toolkits_participants_and_logs_satisfy_the_protocols(tmp_path: Path) -> None:
    participants = [PostgresParticipant("postgresql+psycopg://u@localhost/db", "SELECT 1"),
                    DeltaParticipant(str(tmp_path / "table"))]
    log = FileDecisionLog(str(tmp_path / "log"))

    assert all(isinstance(p, Participant) and not isinstance(p, DecisionLog)
               for p in participants)
    assert isinstance(log, DecisionLog) and not isinstance(log, Participant)
    assert not isinstance(object(), Participant | DecisionLog)
