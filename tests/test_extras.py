"""Every extra works alone: each install shape does real work in processes where the other
extras' libraries cannot be imported, and a feature whose extra is missing names it.

Each test runs its pipeline in fresh processes (Spark's own Python processes included) in which
those libraries fail to import exactly as they do when not installed (helpers/extras.py). The
parent process, which has every extra, then reads what was written.
tests/docs/test_examples.py runs the Postgres and Delta examples the same way, under
``[spark,postgres]`` and ``[spark,delta]``.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from helpers.extras import NO_DELTA, NO_DELTA_NOR_PSYCOPG, NO_SQL, OPTIONAL, without
from helpers.scripts import run_python

pytestmark = pytest.mark.timeout(180)

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

_PRELUDE = f'''
import sys


def loaded():
    return [m for m in {OPTIONAL!r} if m in sys.modules]
'''


def run_without(blocked: Sequence[str], script: str, *args: str) -> Any:
    """Run ``script`` where ``blocked`` cannot be imported; return the JSON it prints last."""
    with tempfile.TemporaryDirectory(prefix="kse-extras-") as site:
        result = subprocess.run(
            [sys.executable, "-c", _PRELUDE + textwrap.dedent(script), *args],
            capture_output=True, text=True, timeout=150, env=without(blocked, Path(site)),
        )
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


# Payments as a share group delivers them: record 3 carries an undecodable value.
_PAYMENTS = """
import pyarrow as pa


def payments(offsets):
    return pa.table({
        "topic": ["payments"] * len(offsets),
        "partition": pa.array([0] * len(offsets), pa.int32()),
        "offset": pa.array(offsets, pa.int64()),
        "value": [b"x" if o == 3 else str(10 * o).encode() for o in offsets],
    })


def decode(rows):
    amounts = [int(v) for v in rows["value"].to_pylist()]
    return rows.append_column("amount", pa.array(amounts, pa.int64()))
"""


def test_importing_the_package_loads_no_optional_library() -> None:
    script = """
    import json
    import kafka_share_eos, kafka_share_eos.strategies
    from kafka_share_eos import *
    from kafka_share_eos import (
        CheckpointDedupStore, DeadLetterPolicy, IdempotentUpsertSink, KafkaShareEosError,
        RecordIdentity, TwoPhaseCommitCoordinator,
    )
    print(json.dumps({"loaded": loaded(), "all": kafka_share_eos.__all__,
                      "dir": dir(kafka_share_eos)}))
    """
    result = run_without((), script)

    assert result["loaded"] == []
    expected = {"IdempotentUpsertSink", "CheckpointDedupStore", "TwoPhaseCommitCoordinator",
                "RecordIdentity", "DeadLetterPolicy", "KafkaShareEosError", "register"}
    assert expected <= set(result["all"])
    assert expected <= set(result["dir"])


def test_every_public_package_imports_with_no_optional_library_installed() -> None:
    script = """
    import importlib, json
    packages = ["kafka_share_eos", "kafka_share_eos.strategies", "kafka_share_eos.sinks",
                "kafka_share_eos.ledger", "kafka_share_eos.deadletter",
                "kafka_share_eos.twophase", "kafka_share_eos.sharegroup", "kafka_share_eos.delta",
                "kafka_share_eos.proving_ground", "kafka_share_eos.proving_ground.bench",
                "kafka_share_eos.cli", "kafka_share_eos.errors", "kafka_share_eos.source",
                "kafka_share_eos.pipeline_status"]
    for name in packages:
        importlib.import_module(name)
    from kafka_share_eos import *
    from kafka_share_eos import MissingExtraError
    import kafka_share_eos.source
    try:
        kafka_share_eos.source.KafkaShareDataSource
    except MissingExtraError as error:
        source = [error.extra, str(error)]
    print(json.dumps({"loaded": loaded(), "source": source}))
    """
    result = run_without(OPTIONAL, script)

    assert result["loaded"] == []
    extra, message = result["source"]
    assert extra == "spark"
    assert "pip install 'kafka-share-eos[spark]'" in message


def test_sqlite_upsert_with_dead_letters_needs_neither_delta_nor_psycopg(tmp_path: Path) -> None:
    database = tmp_path / "shop.db"
    script = _PAYMENTS + textwrap.dedent("""
    import json, sys
    from kafka_share_eos import DeadLetterPolicy, IdempotentUpsertSink, SqlDeadLetters

    url = f"sqlite:///{sys.argv[1]}"
    sink = IdempotentUpsertSink.sql(
        url, "payments", create_table=True, transform=decode,
        dead_letters=DeadLetterPolicy(SqlDeadLetters(url)),
    )
    first = sink.apply(payments([0, 1, 2, 3]), 0)
    # A redelivery of 1..3 with the new record 4.
    second = sink.apply(payments([1, 2, 3, 4]), 1)
    sink.close()
    print(json.dumps({"loaded": loaded(),
                      "written": [first.rows_written, second.rows_written],
                      "dead_lettered": [first.dead_lettered, second.dead_lettered]}))
    """)
    result = run_without(NO_DELTA_NOR_PSYCOPG, script, str(database))

    assert result["loaded"] == ["sqlalchemy"]
    assert result["written"] == [3, 1]
    assert result["dead_lettered"] == [1, 1]
    with sqlite3.connect(database) as conn:
        rows = conn.execute('SELECT "offset", amount FROM payments ORDER BY "offset"').fetchall()
        letters = conn.execute(
            'SELECT "offset", stage FROM kafka_share_dead_letters'
        ).fetchall()
    assert rows == [(0, 0), (1, 10), (2, 20), (4, 40)]
    assert letters == [(3, "transform")]


@pytest.mark.postgres
def test_postgres_upsert_needs_no_delta(postgres_url: str) -> None:
    script = _PAYMENTS + textwrap.dedent("""
    import json, sys
    from kafka_share_eos import IdempotentUpsertSink

    # A threshold of 2 rows sends every batch through the COPY bulk path.
    sink = IdempotentUpsertSink.sql(
        sys.argv[1], "payments", create_table=True, bulk_threshold=2, transform=decode
    )
    reports = [sink.apply(payments(offsets), batch_id)
               for batch_id, offsets in enumerate([[0, 1, 2], [1, 2, 4, 4, 5], [0, 5]])]
    sink.close()
    print(json.dumps({"loaded": loaded(), "written": [r.rows_written for r in reports]}))
    """)
    result = run_without(NO_DELTA, script, postgres_url)

    assert "deltalake" not in result["loaded"]
    assert result["written"] == [3, 2, 0]
    from sqlalchemy import create_engine, text

    engine = create_engine(postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(text('SELECT "offset", amount FROM payments ORDER BY 1')).all()
    engine.dispose()
    assert [tuple(r) for r in rows] == [(0, 0), (1, 10), (2, 20), (4, 40), (5, 50)]


def test_delta_upsert_and_checkpoint_dedup_need_no_sql(tmp_path: Path) -> None:
    script = _PAYMENTS + textwrap.dedent("""
    import json, sys
    from kafka_share_eos import (
        CheckpointDedupStore, DeltaAppendSink, DeltaDeadLetters, IdempotentUpsertSink,
    )

    root = sys.argv[1]
    versions = pa.table({"id": [1, 2, 1], "v": [1, 1, 2], "name": ["a", "b", "a2"],
                         "topic": ["t"] * 3, "partition": pa.array([0] * 3, pa.int32()),
                         "offset": pa.array([0, 1, 2], pa.int64())})
    upsert = IdempotentUpsertSink.delta(f"{root}/customers", key_columns=["id"],
                                        version_column="v")
    upserted = [upsert.apply(versions, 0).rows_written,
                upsert.apply(versions.slice(0, 2), 1).rows_written]  # an older redelivery

    store = CheckpointDedupStore(
        f"{root}/ledger", DeltaAppendSink(f"{root}/payments"), transform=decode,
        dead_letters=DeltaDeadLetters(f"{root}/dead-letters"),
    )
    deduped = [store.apply(payments([0, 1, 2, 3]), 0).rows_written,
               store.apply(payments([0, 1, 2, 3]), 0).rows_written,  # a replay
               store.apply(payments([2, 3, 4]), 1).rows_written]  # redeliveries + record 4
    print(json.dumps({"loaded": loaded(), "upserted": upserted, "deduped": deduped}))
    """)
    result = run_without(NO_SQL, script, str(tmp_path))

    assert result["loaded"] == ["deltalake"]
    assert result["upserted"] == [2, 0]
    assert result["deduped"] == [3, 0, 1]
    from deltalake import DeltaTable

    customers = DeltaTable(str(tmp_path / "customers")).to_pyarrow_table().sort_by("id")
    assert customers.select(["id", "v", "name"]).to_pylist() == [
        {"id": 1, "v": 2, "name": "a2"}, {"id": 2, "v": 1, "name": "b"},
    ]
    applied = DeltaTable(str(tmp_path / "payments")).to_pyarrow_table().sort_by("offset")
    assert applied.select(["offset", "amount"]).to_pylist() == [
        {"offset": o, "amount": 10 * o} for o in (0, 1, 2, 4)
    ]
    letters = DeltaTable(str(tmp_path / "dead-letters")).to_pyarrow_table()
    assert set(letters["offset"].to_pylist()) == {3}


@pytest.mark.postgres
def test_two_phase_commit_with_postgres_participants_needs_no_delta(
    postgres_url: str, tmp_path: Path
) -> None:
    from helpers.accounts import INCREMENT, balances, create_accounts, expected_balances, payments

    create_accounts(postgres_url)
    records = payments(60)
    batches = tmp_path / "batches.arrow"
    overlapping = [records.slice(0, 30), records.slice(20, 40)]
    with pa.OSFile(str(batches), "wb") as out, pa.ipc.new_file(out, records.schema) as writer:
        for batch in overlapping:
            writer.write_table(batch)
    script = """
    import json, sys
    import pyarrow as pa
    from kafka_share_eos import PostgresDecisionLog, PostgresParticipant, TwoPhaseCommitCoordinator

    url, increment, batches = sys.argv[1:4]
    coordinator = TwoPhaseCommitCoordinator(
        log=PostgresDecisionLog(url), participants=[PostgresParticipant(url, increment)],
        app_id="balances",
    )
    reader = pa.ipc.open_file(batches)
    tables = [pa.Table.from_batches([reader.get_batch(i)])
              for i in range(reader.num_record_batches)]
    written = [coordinator.apply(tables[0], 0).rows_written,
               coordinator.apply(tables[1], 1).rows_written,
               coordinator.apply(tables[1], 1).rows_written]  # a replay
    print(json.dumps({"loaded": loaded(), "written": written}))
    """
    result = run_without(
        NO_DELTA, script, postgres_url, INCREMENT, str(batches)
    )

    assert "deltalake" not in result["loaded"]
    assert result["written"] == [30, 30, 0]
    assert balances(postgres_url) == expected_balances(records)


def test_a_missing_extra_is_named(tmp_path: Path) -> None:
    script = """
    import json, sys
    from kafka_share_eos import (
        CheckpointDedupStore, DeltaAppendSink, DeltaDeadLetters, DeltaParticipant,
        IdempotentUpsertSink, KafkaShareEosError, OutboxParticipant, PostgresDecisionLog,
        PostgresParticipant, SqlDeadLetters, register,
    )

    root, postgres = sys.argv[1], "postgresql+psycopg://app@localhost:1/shop"
    attempts = {
        "upsert.delta": lambda: IdempotentUpsertSink.delta(f"{root}/t"),
        "dedup store": lambda: CheckpointDedupStore(f"{root}/l", print),
        "delta append sink": lambda: DeltaAppendSink(f"{root}/a"),
        "delta participant": lambda: DeltaParticipant(f"{root}/p"),
        "delta dead letters": lambda: DeltaDeadLetters(f"{root}/d"),
        "upsert.iceberg": lambda: IdempotentUpsertSink.iceberg(
            "db.t", catalog={"type": "sql", "uri": f"sqlite:///{root}/catalog.db"}),
        "upsert.sql sqlite": lambda: IdempotentUpsertSink.sql(f"sqlite:///{root}/db", "t"),
        "upsert.sql postgres": lambda: IdempotentUpsertSink.sql(postgres, "t"),
        "postgres participant": lambda: PostgresParticipant(postgres, "SELECT 1"),
        "outbox participant": lambda: OutboxParticipant(postgres, ["id"]),
        "postgres decision log": lambda: PostgresDecisionLog(postgres),
        "sql dead letters": lambda: SqlDeadLetters(f"sqlite:///{root}/db"),
        "register": lambda: register(None),
    }
    errors = {}
    for name, attempt in attempts.items():
        try:
            attempt()
        except Exception as error:
            errors[name] = {
                "type": type(error).__name__, "message": str(error),
                "extra": getattr(error, "extra", None), "module": getattr(error, "name", None),
                "family": isinstance(error, KafkaShareEosError),
                "import_error": isinstance(error, ImportError),
            }
    print(json.dumps(errors))
    """
    expected = {
        "upsert.delta": ("delta", "deltalake"),
        "dedup store": ("delta", "deltalake"),
        "delta append sink": ("delta", "deltalake"),
        "delta participant": ("delta", "deltalake"),
        "delta dead letters": ("delta", "deltalake"),
        "upsert.iceberg": ("iceberg", "pyiceberg"),
        "upsert.sql sqlite": ("sqlite", "sqlalchemy"),
        "upsert.sql postgres": ("postgres", "sqlalchemy"),
        "postgres participant": ("postgres", "sqlalchemy"),
        "outbox participant": ("postgres", "sqlalchemy"),
        "postgres decision log": ("postgres", "sqlalchemy"),
        "sql dead letters": ("sqlite", "sqlalchemy"),
        "register": ("spark", "pyspark"),
    }
    errors = run_without(OPTIONAL, script, str(tmp_path))
    # With SQLAlchemy there but not psycopg, a PostgreSQL URL names the postgres extra too.
    without_psycopg = run_without(("psycopg",), script, str(tmp_path))

    assert set(errors) == set(expected)
    for name, (extra, module) in expected.items():
        error = errors[name]
        assert error["type"] == "MissingExtraError", (name, error)
        assert (error["extra"], error["module"]) == (extra, module), name
        assert error["family"] and error["import_error"], name
        assert f"{module} is not installed" in error["message"], name
        assert error["message"].endswith(f"pip install 'kafka-share-eos[{extra}]'"), name
    psycopg = without_psycopg["upsert.sql postgres"]
    assert (psycopg["type"], psycopg["extra"], psycopg["module"]) == (
        "MissingExtraError", "postgres", "psycopg"
    )


@pytest.mark.spark
def test_a_spark_pipeline_on_sqlite_needs_neither_delta_nor_psycopg(tmp_path: Path) -> None:
    # [spark,sqlite]: the source, the upsert and the dead letters, on Spark.
    letters = tmp_path / "letters.db"
    run_python(
        str(EXAMPLES / "dead_letters.py"), "--payments", "300", "--workdir", str(tmp_path),
        "--dead-letters", f"sqlite:///{letters}",
        env=without(NO_DELTA_NOR_PSYCOPG, tmp_path / "site"), timeout=170,
    )

    undecodable = {i for i in range(300) if i % 50 == 49}
    negative = {i for i in range(300) if i % 70 == 69}
    with sqlite3.connect(tmp_path / "payments.db") as db:
        applied = db.execute("SELECT payment_id, amount FROM payments ORDER BY 1").fetchall()
    with sqlite3.connect(letters) as db:
        stages = db.execute(
            "SELECT stage, count(*) FROM kafka_share_dead_letters GROUP BY stage ORDER BY stage"
        ).fetchall()
    good = [i for i in range(300) if i not in undecodable | negative]
    assert applied == [(i, i % 500) for i in good]
    assert stages == [("transform", len(undecodable)), ("write", len(negative))]


def test_the_command_names_a_missing_extra_in_one_line(tmp_path: Path) -> None:
    # A Delta command where deltalake is not installed: the message, not a traceback.
    done = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "dedup", "stats",
         str(tmp_path / "ledger")],
        capture_output=True, text=True, timeout=150, env=without(NO_DELTA, tmp_path / "site"),
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines() == [
        "kafka-share-eos: deltalake is not installed (used by Delta tables): "
        "pip install 'kafka-share-eos[delta]'"
    ]


def test_a_library_too_old_for_a_feature_is_named_with_its_version() -> None:
    import pyspark

    from kafka_share_eos._extras import SPARK
    from kafka_share_eos.errors import MissingExtraError

    with pytest.raises(MissingExtraError) as caught, SPARK.needed_by("the kafka-share source"):
        import pyspark.sql.streaming.no_such_module

    message = str(caught.value)
    assert caught.value.installed == pyspark.__version__
    assert f"pyspark {pyspark.__version__} is too old for the kafka-share source" in message
    assert "pyspark.sql.streaming.no_such_module" in message
    assert "pip install --upgrade 'kafka-share-eos[spark]'" in message
