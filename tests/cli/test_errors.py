"""Every command on every failure on the user's side it can meet: an unreachable database or
broker or store, a path that holds something else, a URL of the wrong form, a missing extra.
Each ends in one or two lines that name what failed, with its documented exit code, and no
traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from kafka_share_eos.cli.errors import FAILED, USAGE, Failure, describe, given, shown
from kafka_share_eos.cli.main import app
from kafka_share_eos.errors import JournalError, LocationNotFoundError, MissingExtraError

# Nothing listens on port 1.
DOWN_DB = "postgresql+psycopg://app:secret@127.0.0.1:1/shop"
DOWN_DB_SHOWN = "postgresql+psycopg://app:***@127.0.0.1:1/shop"
DOWN_KAFKA = "kafka://127.0.0.1:1/letters"
DOWN_S3 = ["-o", "endpoint=http://127.0.0.1:1", "-o", "allow_http=true", "-o", "region=x",
           "-o", "aws_access_key_id=x", "-o", "aws_secret_access_key=y"]

# (command line, exit code, what the message names); {empty} is an empty directory, {notes} one
# holding notes.txt, {file} a file, {checkpoint} a Spark checkpoint, {missing} nothing.
CASES = {
    "status/unreachable database": (
        ["status", "--journal", "{empty}", "--dead-letters", DOWN_DB], FAILED,
        ["--dead-letters", DOWN_DB_SHOWN, "could not be reached"]),
    "status/unreachable broker": (
        ["status", "--journal", "{empty}", "--dead-letters", DOWN_KAFKA], FAILED,
        ["--dead-letters", DOWN_KAFKA]),
    "status/unreachable store": (
        ["status", "--journal", "s3://bucket/journal", *DOWN_S3], FAILED,
        ["--journal s3://bucket/journal", "could not be reached", "--storage-option"]),
    "status/not a journal": (
        ["status", "--journal", "{notes}"], USAGE, ["--journal", "no journal at", "notes.txt"]),
    "status/a checkpoint": (
        ["status", "--journal", "{checkpoint}"], USAGE, ["--journal", "Spark checkpoint"]),
    "status/missing": (["status", "--journal", "{missing}"], USAGE, ["--journal", "missing"]),
    "status/bad url": (
        ["status", "--journal", "nope://bucket/journal"], USAGE, ["--journal", "nope://"]),
    "status/bad dead-letter url": (
        ["status", "--journal", "{empty}", "--dead-letters", "nope://x"], USAGE,
        ["--dead-letters nope://x"]),
    "status/not a database": (
        ["status", "--journal", "{empty}", "--dead-letters", "sqlite:///{file}"], FAILED,
        ["--dead-letters", "not a database"]),
    "doctor/missing": (
        ["doctor", "--checkpoint", "{missing}"], USAGE, ["--checkpoint", "no checkpoint at"]),
    "doctor/a file": (["doctor", "--checkpoint", "{file}"], USAGE, ["--checkpoint", "file"]),
    "doctor/bad url": (
        ["doctor", "--checkpoint", "nope://bucket/ckpt"], USAGE, ["--checkpoint", "nope://"]),
    "doctor/unreachable store": (
        ["doctor", "--checkpoint", "s3://bucket/ckpt", *DOWN_S3], FAILED,
        ["--checkpoint s3://bucket/ckpt", "could not be reached", "--storage-option"]),
    "dedup stats/not a ledger": (
        ["dedup", "stats", "{notes}"], USAGE, ["LEDGER", "no Delta ledger table"]),
    "dedup stats/a file": (["dedup", "stats", "{file}"], USAGE, ["LEDGER", "it is a file"]),
    "dedup prune/missing": (["dedup", "prune", "{missing}"], USAGE, ["LEDGER", "missing"]),
    "dedup compact/missing": (["dedup", "compact", "{missing}"], USAGE, ["LEDGER", "missing"]),
    "dedup stats/unreachable store": (
        ["dedup", "stats", "s3://bucket/ledger", *DOWN_S3], FAILED,
        ["LEDGER s3://bucket/ledger", "could not be read"]),
    "twophase/unreachable decision log": (
        ["twophase", "recover", "--app-id", "a", "--decision-log", DOWN_DB,
         "--postgres", DOWN_DB], FAILED, ["--decision-log", DOWN_DB_SHOWN]),
    "twophase/unreachable participant": (
        ["twophase", "recover", "--app-id", "a", "--decision-log", "{empty}",
         "--postgres", DOWN_DB], FAILED, ["--postgres", DOWN_DB_SHOWN]),
    "twophase/not a decision log": (
        ["twophase", "recover", "--app-id", "a", "--decision-log", "{notes}",
         "--delta", "{empty}"], USAGE, ["--decision-log", "no decision log", "notes.txt"]),
    "twophase/not a delta table": (
        ["twophase", "recover", "--app-id", "a", "--decision-log", "{empty}",
         "--delta", "{notes}"], USAGE, ["--delta", "no Delta table"]),
    "twophase/bad url": (
        ["twophase", "recover", "--app-id", "a", "--decision-log", "{empty}",
         "--postgres", "not-a-url"], USAGE, ["--postgres not-a-url", "SQLAlchemy URL"]),
    "verify/unreachable database": (
        ["verify", "--strategy", "upsert-postgres", "--postgres-url", DOWN_DB], FAILED,
        ["--postgres-url", DOWN_DB_SHOWN]),
    "verify/bad url": (
        ["verify", "--strategy", "upsert-postgres", "--postgres-url", "not-a-url"], USAGE,
        ["--postgres-url not-a-url"]),
    "verify/workdir a file": (["verify", "--workdir", "{file}"], USAGE, ["--workdir", "file"]),
    "verify/results not json": (
        ["verify", "--results", "{notes}/notes.txt"], USAGE, ["--results", "JSON lines"]),
    "verify/results nowhere": (
        ["verify", "--results", "{missing}/runs.jsonl"], USAGE, ["--results", "no directory"]),
    "bench/unreachable database": (
        ["bench", "--quick", "--postgres-url", DOWN_DB], FAILED,
        ["--postgres-url", DOWN_DB_SHOWN]),
    "bench/not a saved run": (
        ["bench", "--against", "{notes}/notes.txt"], USAGE, ["--against", "not a run saved"]),
    "broker/address file nowhere": (
        ["broker", "--addr-file", "{missing}/address"], USAGE, ["--addr-file", "no directory"]),
    "demo/workdir a file": (["demo", "--workdir", "{file}"], USAGE, ["--workdir {file}"]),
    "demo/bad url": (["demo", "--sql-url", "not-a-url"], USAGE, ["--sql-url", "SQLAlchemy URL"]),
    "kafka-tool/unknown tool": (["kafka-tool", "no-such-tool"], FAILED, ["no-such-tool"]),
}

# (command line, the library made missing, the extra the message says to install)
MISSING_EXTRAS = {
    "status": (["status", "--journal", "{empty}", "--dead-letters", "{empty}"], "deltalake",
               "delta"),
    "dedup stats": (["dedup", "stats", "{empty}"], "deltalake", "delta"),
    "twophase recover": (["twophase", "recover", "--app-id", "a", "--decision-log", "{empty}",
                          "--postgres", DOWN_DB], "psycopg", "postgres"),
    "verify": (["verify", "--strategy", "upsert-postgres", "--postgres-url", DOWN_DB],
               "psycopg", "postgres"),
    "bench": (["bench", "--save", "{empty}/bench"], "matplotlib", "charts"),
}


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "notes.txt").write_text("not what a command reads\n")
    (tmp_path / "file").write_text("a file\n")
    for name in ("offsets/0", "commits/0", "metadata"):
        (tmp_path / "checkpoint" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "checkpoint" / name).write_text("{}")
    return {name: str(tmp_path / name)
            for name in ("empty", "notes", "file", "checkpoint", "missing")}


def invoke(args: list[str], places: dict[str, str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, [arg.format(**places) for arg in args],
                                env={"COLUMNS": "80", "NO_COLOR": "1"})
    # An exception the command line let through is what the console script prints as a
    # traceback: only the exit it chose may end it.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception, result.output)
    return result.exit_code, result.output


@pytest.mark.timeout(120)
@pytest.mark.parametrize("case", list(CASES))
def test_a_failure_is_one_or_two_lines_naming_what_failed(
    case: str, places: dict[str, str]
) -> None:
    args, code, named = CASES[case]
    exit_code, output = invoke(args, places)
    assert "Traceback" not in output
    assert exit_code == code, output
    lines = output.strip().splitlines()
    assert 1 <= len(lines) <= 2 and lines[0].startswith("kafka-share-eos: "), output
    for text in named:
        assert text.format(**places) in output, output
    assert "secret" not in output


@pytest.mark.parametrize("command", list(MISSING_EXTRAS))
def test_a_missing_extra_names_the_install_line(
    command: str, places: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args, library, extra = MISSING_EXTRAS[command]
    monkeypatch.setitem(sys.modules, library, None)  # import raises ModuleNotFoundError
    exit_code, output = invoke(args, places)
    assert exit_code == FAILED, output
    assert output.strip().splitlines() == [output.strip()]
    assert f"{library} is not installed" in output
    assert f"pip install 'kafka-share-eos[{extra}]'" in output


def command_paths(command: object, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    subs = sorted(getattr(command, "commands", {}).items())
    return [path, *(p for name, sub in subs for p in command_paths(sub, (*path, name)))]


# kafka-tool hands every argument after its own options to Kafka's tool.
PATHS = [path for path in command_paths(typer.main.get_command(app)) if path != ("kafka-tool",)]


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "main")
def test_a_command_line_mistake_is_two_lines_too(path: tuple[str, ...]) -> None:
    exit_code, output = invoke([*path, "--no-such-option"], {})
    assert exit_code == USAGE
    first, hint = output.splitlines()
    assert first.startswith("kafka-share-eos: No such option: --no-such-option")
    assert hint == f"Try '{' '.join(('kafka-share-eos', *path))} --help' for help."


@pytest.mark.parametrize("path", [(), ("dedup",), ("twophase",)],
                         ids=["main", "dedup", "twophase"])
def test_a_group_named_alone_shows_its_help_once(path: tuple[str, ...]) -> None:
    exit_code, output = invoke(list(path), {})
    assert exit_code == USAGE
    assert output.count("Usage:") == 1 and "kafka-share-eos: " not in output


@pytest.mark.timeout(120)
@pytest.mark.parametrize(("target", "shown_as"), [(DOWN_DB, DOWN_DB_SHOWN),
                                                   (DOWN_KAFKA, DOWN_KAFKA)],
                         ids=["database", "broker"])
def test_the_console_script_prints_two_lines_and_nothing_else(
    tmp_path: Path, target: str, shown_as: str
) -> None:
    # Run as a user runs it: whatever a library writes to the process's stderr is seen too.
    done = subprocess.run(
        [sys.executable, "-m", "kafka_share_eos.cli.main", "status", "--journal",
         str(tmp_path), "--dead-letters", target],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == FAILED
    assert done.stdout == ""
    first, advice = done.stderr.splitlines()
    assert first.startswith(f"kafka-share-eos: --dead-letters {shown_as}: ")
    assert advice.startswith("Check that the")


def test_a_defect_keeps_its_traceback() -> None:
    assert describe(KeyError("a bug")) is None
    assert describe(RuntimeError("a bug")) is None
    assert describe(BrokenPipeError()) is None


def test_failures_by_kind() -> None:
    assert describe(LocationNotFoundError("no journal at 'x'")) == Failure(
        USAGE, "no journal at 'x'")
    assert describe(JournalError("segment 3 is damaged")).code == FAILED  # type: ignore[union-attr]
    missing = describe(MissingExtraError("Delta tables", "deltalake", "delta"))
    assert missing is not None and missing.code == FAILED and missing.advice == ""
    assert shown("postgresql://u:pw@h/db") == "postgresql://u:***@h/db"


def test_given_names_the_option_and_lets_a_defect_through() -> None:
    with pytest.raises(Exception) as failed, given("--journal", "/j"):
        raise LocationNotFoundError("no journal at '/j'")
    assert str(failed.value) == "--journal /j: no journal at '/j'"
    with pytest.raises(KeyError), given("--journal", "/j"):
        raise KeyError("a bug")
