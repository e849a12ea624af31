"""The pieces of the demo's and the examples' quiet output that need no Spark: the cause of a
failure read out of Spark's wrapping, and stderr sent to a log file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from kafka_share_eos.proving_ground.console import SimulatedCrash, failure_cause
from kafka_share_eos.proving_ground.console.logfile import StderrToFile

# The text of a StreamingQueryException for an error raised in foreachBatch (trimmed).
SPARK_WRAPPED = """[STREAM_FAILED] Query [id = 8454, runId = e822] terminated with exception: \
[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred in the user provided function in foreach \
batch sink. Reason: An exception was raised by the Python Proxy. Return Message: Traceback \
(most recent call last):
  File "/venv/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/sqlalchemy/engine/default.py", line 869, in connect
    return self.loaded_dbapi.connect(*cargs, **cparams)
sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: refused
(Background on this error at: https://sqlalche.me/e/21/e3q8)
 SQLSTATE: 39000

JVM stacktrace:
org.apache.spark.sql.streaming.StreamingQueryException
\tat org.apache.spark.sql.execution.streaming.StreamExecution.runStream(StreamExecution.scala:1)
"""


def test_the_cause_of_a_spark_wrapped_error_is_its_python_exception() -> None:
    assert failure_cause(RuntimeError(SPARK_WRAPPED)) == (
        "OperationalError: (psycopg.OperationalError) connection failed: refused\n"
        "(Background on this error at: https://sqlalche.me/e/21/e3q8)"
    )


def test_the_cause_of_a_plain_error_is_its_class_and_first_lines() -> None:
    assert failure_cause(FileNotFoundError("no journal at /x")) == (
        "FileNotFoundError: no journal at /x"
    )
    assert failure_cause(KeyboardInterrupt()) == "KeyboardInterrupt"
    long = ValueError("\n".join(f"line {i}" for i in range(10)))
    assert failure_cause(long) == "ValueError: line 0\nline 1\nline 2\nline 3"


def test_a_simulated_crash_is_found_in_the_spark_error_wrapping_it() -> None:
    wrapped = SPARK_WRAPPED.replace(
        "sqlalchemy.exc.OperationalError: (psycopg.OperationalError) connection failed: refused",
        f"kafka_share_eos.proving_ground.console.crash.SimulatedCrash: {SimulatedCrash(3)}",
    )
    assert SimulatedCrash.named_in(wrapped) == "simulated crash in batch 3 after the sink"
    assert SimulatedCrash.named_in(SPARK_WRAPPED) is None


def test_stderr_of_the_process_and_its_children_goes_to_the_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "run.log"
    script = f"""
import logging, os, subprocess, sys
from pathlib import Path
from kafka_share_eos.proving_ground.console.logfile import StderrToFile
with StderrToFile(Path({str(log)!r}), "a run"):
    os.write(2, b"from descriptor 2\\n")
    print("from sys.stderr", file=sys.stderr)
    logging.getLogger("kafka_share_eos.source").info("from the toolkit's logger")
    subprocess.run([sys.executable, "-c", "import sys; sys.stderr.write('from a child\\\\n')"])
    print("to the terminal")
print("after, on stderr again", file=sys.stderr)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    assert result.stdout == "to the terminal\n"
    assert result.stderr == "after, on stderr again\n"
    text = log.read_text()
    assert text.startswith("=== a run, ")
    for line in ("from descriptor 2", "from sys.stderr", "from the toolkit's logger",
                 "from a child"):
        assert line in text


def test_the_log_is_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    for title in ("first", "second"):
        with StderrToFile(log, title):
            pass
    headers = [line.split(",")[0] for line in log.read_text().splitlines()]
    assert headers == ["=== first", "=== second"]
