"""How a command ends on a failure on the user's side: one or two lines on stderr, naming what
failed and what to do, and an exit code of its kind; never a traceback.

Exit codes (docs/operations.md lists them):

- 0: the command did its work and found nothing wrong;
- 1: it could not do its work, or found a problem: a database, broker, object store or file it
  was given could not be reached or read, a journal segment is damaged, an optional dependency
  is missing, or what it checks is not right (``doctor``: Spark cannot restart from the
  checkpoint; ``verify``: a record was duplicated or lost);
- 2: the command line: an unknown option, a value of the wrong form, a location that holds no
  journal, checkpoint, ledger, decision log or Delta table, a URL no sink or store takes;
- 130 and 143: stopped by Ctrl-C or SIGTERM.

An exception the toolkit's own family or a known library raises for something the user gave
ends the command here (:func:`describe`); any other exception is a defect and keeps its
traceback. Commands name what they were given with :func:`given`, so the line says which
option failed even where the library's message does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from kafka_share_eos.errors import (
    ConfigurationError,
    DatabaseUnavailableError,
    KafkaShareEosError,
    LocationNotFoundError,
    MissingExtraError,
    StoreUnreachableError,
)

FAILED = 1
"""Exit code of a command that could not do its work or found a problem."""
USAGE = 2
"""Exit code of a command line the command cannot use."""

_DATABASE = ("Check that the database runs and accepts connections at that address, and the "
             "URL's host, port, user and database.")
_BROKER = "Check that the brokers run at that address and that this machine reaches them."
_STORE = ("Check the location and its --storage-option settings (endpoint, region, "
          "credentials).")
_PATH = "Check the path: it must name what the option asks for."


@dataclass(frozen=True)
class Failure:
    """What ends a command: its exit code and the lines it prints."""

    code: int
    reason: str
    advice: str = ""

    def lines(self, what: str | None = None) -> list[str]:
        """The message: ``kafka-share-eos: WHAT: REASON``, then the advice if there is one."""
        first = f"kafka-share-eos: {what + ': ' if what else ''}{self.reason}"
        return [first, self.advice] if self.advice else [first]


class GivenFailure(KafkaShareEosError):
    """A failure of one thing the command was given (``--dead-letters URL``), on its way to the
    command's lines; it never leaves the command line."""

    def __init__(self, what: str, failure: Failure) -> None:
        super().__init__(f"{what}: {failure.reason}")
        self.what = what
        self.failure = failure


def shown(value: str) -> str:
    """``value`` as a message may show it: a URL's password left out."""
    return re.sub(r"(://[^/:@\s]+:)[^/@\s]+@", r"\1***@", value)


@contextmanager
def given(option: str, value: str) -> Iterator[None]:
    """Turn a failure of ``value``, given as ``option``, into a :class:`GivenFailure` that names
    both; a ``ValueError`` inside is a value the toolkit refused (usage). A missing extra is
    the library's failure, not the value's, and passes unchanged."""
    try:
        yield
    except MissingExtraError:
        raise
    except Exception as error:
        failure = describe(error)
        if failure is None and isinstance(error, ValueError):
            failure = Failure(USAGE, _first_line(error))
        if failure is None:
            raise
        raise GivenFailure(f"{option} {shown(value)}", failure) from error


def _first_line(error: BaseException) -> str:
    """The first line of ``error``'s message; delta-rs lists the causes below it, coloured,
    one per line marked ``↳``, and the last is the one that says what happened."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(error)).strip()
    if not text:
        return type(error).__name__
    lines = text.splitlines()
    causes = [line.strip()[1:].strip() for line in lines if line.strip().startswith("↳")]
    return f"{lines[0]}: {causes[-1]}" if causes else lines[0]


# The top-level modules that define a library's exceptions: confluent-kafka's are its C
# extension's, delta-rs's its Rust extension's.
_MODULES = {"confluent_kafka": {"confluent_kafka", "cimpl"},
            "deltalake": {"deltalake", "_internal"}}


def _is(error: BaseException, library: str, *names: str) -> bool:
    """Whether ``error`` is one of the classes ``names`` of ``library``, told apart without
    importing a library that may not be installed."""
    modules = _MODULES.get(library, {library})
    return any(cls.__module__.split(".")[0] in modules and cls.__name__ in names
               for cls in type(error).__mro__)


def _driver_reason(error: BaseException) -> str:
    """The driver's own line under SQLAlchemy's wrapper, which adds the SQL and a link."""
    orig = getattr(error, "orig", None)
    return _first_line(orig if orig is not None else error)


def _database(error: BaseException) -> Failure | None:
    if isinstance(error, DatabaseUnavailableError):
        reason = _driver_reason(error.__cause__) if error.__cause__ else _first_line(error)
        return Failure(FAILED, f"the database could not be reached ({reason})", _DATABASE)
    if _is(error, "sqlalchemy", "ArgumentError"):
        return Failure(USAGE, f"not a SQLAlchemy URL ({_first_line(error)})",
                       "A URL is dialect+driver://user:password@host:port/database, e.g. "
                       "postgresql+psycopg://app@db:5432/orders or sqlite:////data/orders.db.")
    if _is(error, "sqlalchemy", "OperationalError", "InterfaceError"):
        return Failure(FAILED, f"the database could not be reached ({_driver_reason(error)})",
                       _DATABASE)
    if _is(error, "sqlalchemy", "DBAPIError"):
        return Failure(FAILED, f"the database refused it ({_driver_reason(error)})",
                       "Check that the URL names the database meant.")
    return None


def _usage(error: BaseException) -> Failure:
    """Click's refusal of the command line, in the same two lines as any other failure."""
    context = getattr(error, "ctx", None)
    hint = f"Try '{context.command_path} --help' for help." if context is not None else ""
    message = getattr(error, "format_message", lambda: str(error))()
    return Failure(int(getattr(error, "exit_code", USAGE)), " ".join(message.split()), hint)


def describe(error: BaseException) -> Failure | None:
    """The failure ``error`` stands for, when a user's input or environment caused it: None
    for any other exception, a defect whose traceback is wanted."""
    if isinstance(error, GivenFailure):
        return error.failure
    if isinstance(error, BrokenPipeError):
        return None  # the reader went away (| head): the command line's own handling ends it
    if _is(error, "typer", "NoArgsIsHelpError") or _is(error, "click", "NoArgsIsHelpError"):
        return None  # the help, shown for a group named alone: click's own way is right
    if _is(error, "typer", "UsageError") or _is(error, "click", "UsageError"):
        return _usage(error)
    if isinstance(error, MissingExtraError):
        return Failure(FAILED, _first_line(error))
    database = _database(error)
    if database is not None:
        return database
    if _is(error, "confluent_kafka", "KafkaException", "KafkaError"):
        return Failure(FAILED, f"Kafka could not be reached or refused ({_first_line(error)})",
                       _BROKER)
    if isinstance(error, (LocationNotFoundError, ConfigurationError)):
        return Failure(USAGE, _first_line(error))
    if isinstance(error, StoreUnreachableError):
        return Failure(FAILED, _first_line(error), _STORE)
    if isinstance(error, KafkaShareEosError):
        return Failure(FAILED, _first_line(error))
    if isinstance(error, (FileNotFoundError, FileExistsError, NotADirectoryError,
                          IsADirectoryError)):
        return Failure(USAGE, _first_line(error), _PATH)
    if _is(error, "pyarrow", "ArrowInvalid"):
        return Failure(USAGE, _first_line(error),
                       "Give a local path or a URI of a store pyarrow.fs knows (s3://, gs://, "
                       "abfs://, hdfs://).")
    if isinstance(error, PermissionError):
        return Failure(FAILED, _first_line(error), "Check the permissions of that location.")
    if isinstance(error, (OSError, TimeoutError)) or _is(error, "obstore", "BaseError") or _is(
        error, "deltalake", "DeltaError"
    ):
        return Failure(FAILED, f"could not be read ({_first_line(error)})", _STORE)
    return None
