"""Two applications, one share group, the same targets: two-phase commit keeps every effect once.

Applications A and B (each its own decision log and ``app_id``) write one Postgres ledger and
accounts table (``balance = balance + amount``) and one Delta table. A record whose lock
expired while A's batch ran is delivered to B too, so both batches hold it. Pauses inside the
participants make them hold it at the worst moments: both staged before either commits, one
waiting on the other's prepared rows, one resolved by another process while it runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from deltalake import DeltaTable
from helpers.accounts import (
    INCREMENT,
    balances,
    create_accounts,
    delta_keys,
    expected_balances,
    payments,
    prepared_gids,
    record_keys,
    wait_for_lock_waiter,
)
from helpers.pauses import Background, Pause, Paused

from kafka_share_eos.errors import AppIdConflictError
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase import (
    DecisionOverruledError,
    FileDecisionLog,
    Participant,
    TwoPhaseCommitError,
    resolve_in_doubt,
    txid_prefix,
)
from kafka_share_eos.twophase.delta import DeltaParticipant
from kafka_share_eos.twophase.delta_staging import STAGING_DIR
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]


def staged_files(delta_path: str) -> list[Path]:
    """Manifests and data files that no Delta commit lists (prepared work left behind)."""
    root = Path(delta_path)
    manifests = list((root / STAGING_DIR).glob("*.json")) if (root / STAGING_DIR).exists() else []
    committed = {uri.rsplit("/", 1)[-1] for uri in DeltaTable(delta_path).file_uris()}
    return manifests + [p for p in root.glob("*.parquet") if p.name not in committed]


def application(
    name: str, tmp_path: Path, participants: list[Participant], app_id: str | None = None
) -> TwoPhaseCommitCoordinator:
    return TwoPhaseCommitCoordinator(
        log=str(tmp_path / f"{name}-decisions"), participants=participants,
        app_id=app_id or name,
    )


@pytest.mark.parametrize("first", ["A", "B"])
def test_records_both_applications_staged_land_once_in_delta(
    first: str, tmp_path: Path
) -> None:
    delta_path = str(tmp_path / "payments")
    records = payments(45)
    held = {"A": records.slice(0, 30), "B": records.slice(15, 30)}
    commits = {"A": Pause(), "B": Pause()}
    apps = {
        n: application(n, tmp_path, [Paused(DeltaParticipant(delta_path),
                                            before_commit=commits[n])])
        for n in "AB"
    }
    runs = {}
    for n in "AB":
        runs[n] = Background(lambda n=n: apps[n].apply(held[n], 0))
        commits[n].wait()  # staged and decided, not committed

    second = "B" if first == "A" else "A"
    commits[first].release()
    assert runs[first].outcome().rows_written == 30
    commits[second].release()
    assert runs[second].outcome().rows_written == 15

    assert delta_keys(delta_path) == record_keys(records)
    last = apps[second].last_commit
    assert last is not None and last.skipped == {"delta": 15}
    assert staged_files(delta_path) == []


def test_each_effect_lands_once_when_one_application_waits_on_the_others_prepared_rows(
    postgres_url: str, tmp_path: Path
) -> None:
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    records = payments(60)
    held = {"A": records.slice(0, 40), "B": records.slice(20, 40)}
    a_postgres_commit, a_delta_commit = Pause(), Pause()
    a = application("A", tmp_path, [
        Paused(PostgresParticipant(postgres_url, INCREMENT), before_commit=a_postgres_commit),
        Paused(DeltaParticipant(delta_path), before_commit=a_delta_commit),
    ])
    b = application("B", tmp_path, [
        PostgresParticipant(postgres_url, INCREMENT), DeltaParticipant(delta_path),
    ])

    run_a = Background(lambda: a.apply(held["A"], 0))
    a_postgres_commit.wait()  # A prepared everywhere and decided COMMIT
    run_b = Background(lambda: b.apply(held["B"], 7))
    # B's ledger claims wait for A's prepared transaction, which holds 20 of B's keys.
    wait_for_lock_waiter(postgres_url)
    assert run_b.is_alive()

    a_postgres_commit.release()
    a_delta_commit.wait()  # A committed Postgres; its Delta files are staged, not committed
    # B skips in Postgres what A committed, and stages in Delta what A has not committed yet.
    assert run_b.outcome().rows_written == 40
    a_delta_commit.release()
    assert run_a.outcome().rows_written == 40

    assert balances(postgres_url) == expected_balances(records)
    assert delta_keys(delta_path) == record_keys(records)
    assert a.last_commit is not None and a.last_commit.skipped == {"postgres": 0, "delta": 20}
    assert prepared_gids(postgres_url) == []
    assert staged_files(delta_path) == []


@pytest.mark.parametrize("resolved_before", ["decision", "commit"])
def test_resolving_a_live_applications_transaction_is_fenced_by_its_decision(
    resolved_before: str, postgres_url: str, tmp_path: Path
) -> None:
    """Another process resolves A's transaction while A runs: A's stored decision wins."""
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    records = payments(30)
    pause = Pause()
    postgres, delta = PostgresParticipant(postgres_url, INCREMENT), DeltaParticipant(delta_path)
    if resolved_before == "decision":
        paused: list[Participant] = [postgres, Paused(delta, after_prepare=pause)]
    else:
        paused = [Paused(postgres, before_commit=pause), delta]
    a = application("A", tmp_path, paused)
    run = Background(lambda: a.apply(records, 0))
    pause.wait()

    log = FileDecisionLog(str(tmp_path / "A-decisions"))
    outsider = resolve_in_doubt(log, [postgres, delta], txid_prefix("A"), forget=False)
    pause.release()

    if resolved_before == "decision":
        # The outsider decided ABORT first and rolled back; A's COMMIT lost and A aborted.
        assert len(outsider.aborts_written) == 1
        with pytest.raises(DecisionOverruledError, match="app_id 'A'"):
            run.outcome()
        assert balances(postgres_url) == dict.fromkeys(expected_balances(records), 0)
        assert staged_files(delta_path) == []
        assert a.apply(records, 0).rows_written == 30  # Spark runs the batch again
        assert log.txids("kse:") == []  # A's own recovery forgot the outsider's decision
    else:
        # A's COMMIT was stored: the outsider committed A's work, and A's commit is a no-op.
        assert outsider.aborts_written == () and len(outsider.committed) == 2
        assert run.outcome().rows_written == 30
    assert balances(postgres_url) == expected_balances(records)
    assert delta_keys(delta_path) == record_keys(records)
    assert prepared_gids(postgres_url) == []


def test_two_applications_with_one_app_id_on_a_delta_table_get_an_error_not_duplicates(
    tmp_path: Path,
) -> None:
    delta_path = str(tmp_path / "payments")
    records = payments(30)
    b_prepare, a_commit, b_commit = Pause(), Pause(), Pause()
    a = application("A", tmp_path, [Paused(DeltaParticipant(delta_path), before_commit=a_commit)],
                    app_id="same")
    b = application("B", tmp_path, [Paused(DeltaParticipant(delta_path), before_prepare=b_prepare,
                                           before_commit=b_commit)], app_id="same")
    run_b = Background(lambda: b.apply(records.slice(10, 20), 0))
    b_prepare.wait()  # B's recovery is done
    run_a = Background(lambda: a.apply(records.slice(0, 20), 0))
    a_commit.wait()
    b_prepare.release()
    b_commit.wait()  # both staged the same application-transaction version
    a_commit.release()
    run_a.outcome()
    b_commit.release()
    with pytest.raises(AppIdConflictError, match="app_id 'same'") as error:
        run_b.outcome()
    assert delta_path in str(error.value)
    assert delta_keys(delta_path) == record_keys(records)


def test_an_application_sharing_the_app_id_rolls_back_the_others_work_which_then_fails(
    postgres_url: str, tmp_path: Path
) -> None:
    create_accounts(postgres_url)
    delta_path = str(tmp_path / "payments")
    records = payments(30)
    a_commit = Pause()
    a = application("A", tmp_path, [
        Paused(PostgresParticipant(postgres_url, INCREMENT), before_commit=a_commit),
        DeltaParticipant(delta_path),
    ], app_id="same")
    b = application("B", tmp_path, [
        PostgresParticipant(postgres_url, INCREMENT), DeltaParticipant(delta_path),
    ], app_id="same")
    run_a = Background(lambda: a.apply(records, 0))
    a_commit.wait()
    # B's recovery takes A's prepared work for its own crashed run's and rolls it back.
    assert b.recover().resolved == 2
    a_commit.release()
    with pytest.raises(TwoPhaseCommitError, match="app_id 'same'"):
        run_a.outcome()
    assert balances(postgres_url) == dict.fromkeys(expected_balances(records), 0)
    assert a.apply(records, 0).rows_written == 30
    assert balances(postgres_url) == expected_balances(records)
    assert delta_keys(delta_path) == record_keys(records)
