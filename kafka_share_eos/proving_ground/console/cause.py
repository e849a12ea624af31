"""The cause of a failed run, in a few lines a person can read.

An error raised in ``foreachBatch`` reaches the driver wrapped twice: the Python exception
becomes a Java ``ForeachBatchUserFuncException`` whose message holds the Python traceback, and
that comes back as a :class:`StreamingQueryException` whose text adds Spark's error class, a
SQLSTATE and the JVM stack. What the user needs is the innermost Python exception's line.
"""

from __future__ import annotations

_TRACEBACK = "Traceback (most recent call last):"
_MAX_LINES = 4
# Lines Spark appends after the Python exception it wraps.
_SPARK_TAILS = (" SQLSTATE:", "\tat ", "Caused by:", "JVM stacktrace:", "=== Streaming Query ===")


def failure_cause(error: BaseException) -> str:
    """The innermost Python exception of ``error`` as ``Class: message`` (at most a few lines).

    A Python traceback carried in the text of a Spark error (an exception raised in
    ``foreachBatch`` or in the source) is preferred to Spark's wrapping of it.
    """
    text = str(error)
    wrapped = _last_exception_in_traceback(text)
    if wrapped is not None:
        return wrapped
    message = _first_lines(text.split("\n\nJVM stacktrace:", 1)[0])
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def _last_exception_in_traceback(text: str) -> str | None:
    start = text.rfind(_TRACEBACK)
    if start < 0:
        return None
    lines = text[start + len(_TRACEBACK):].splitlines()
    for index, line in enumerate(lines):
        # Frames and their source lines are indented; the exception line is not.
        if line and not line[0].isspace():
            name, sep, message = line.partition(": ")
            body = _first_lines("\n".join([message, *lines[index + 1:]])) if sep else ""
            short = name.rsplit(".", 1)[-1]
            return f"{short}: {body}" if body else short
    return None


def _first_lines(text: str) -> str:
    kept: list[str] = []
    for line in text.splitlines():
        if line.startswith(_SPARK_TAILS) or (not line.strip() and kept):
            break
        if line.strip():
            kept.append(line.rstrip())
        if len(kept) == _MAX_LINES:
            break
    return "\n".join(kept)
