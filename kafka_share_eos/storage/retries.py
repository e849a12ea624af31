"""How often and how long an object-store client retries a failed request, from storage options.

delta-rs reads ``object_store``'s retry settings from its ``storage_options`` (``max_retries``,
``retry_timeout``, ``backoff_config.init_backoff``, ``backoff_config.max_backoff``,
``backoff_config.base``, durations written as ``"30s"``, ``"500ms"``, ``"2m"``); obstore takes the
same settings as a ``retry_config`` dict of its own and refuses them among the store's keys. So
that one dict of options configures every client of a pipeline alike, :func:`split_retry_options`
takes them out of the store's options and gives them to obstore in its form.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

from kafka_share_eos.errors import ConfigurationError

__all__ = ["RETRY_OPTIONS", "split_retry_options"]

_BACKOFF = ("init_backoff", "max_backoff", "base")
# delta-rs' spellings of each setting (crates/core/src/logstore/storage/retry_ext.rs).
RETRY_OPTIONS: frozenset[str] = frozenset({
    "max_retries", "retry_timeout",
    *(f"{prefix}{name}" for name in _BACKOFF
      for prefix in ("", "backoff_config.", "backoff.")),
})
"""The storage options that set the client's retries, as delta-rs spells them."""

_UNITS = {"ms": 0.001, "msec": 0.001, "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
          "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0, "h": 3600.0, "hr": 3600.0,
          "hour": 3600.0, "hours": 3600.0}
_SPAN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]+)")


def split_retry_options(options: Mapping[str, str]) -> tuple[dict[str, str], dict[str, Any]]:
    """The options without the retry settings, and those settings as obstore's
    ``retry_config`` (empty when none is given: obstore's defaults hold).

    Raises:
        ConfigurationError: a retry setting whose value is no count, number or duration.
    """
    rest: dict[str, str] = {}
    retry: dict[str, Any] = {}
    for key, value in options.items():
        name = key.lower()
        if name not in RETRY_OPTIONS:
            rest[key] = value
        elif name == "max_retries":
            retry["max_retries"] = _number(key, value, int)
        elif name == "retry_timeout":
            retry["retry_timeout"] = _duration(key, value)
        else:
            setting = name.rsplit(".", 1)[-1]
            backoff = retry.setdefault("backoff", {})
            backoff[setting] = (_number(key, value, float) if setting == "base"
                                else _duration(key, value))
    return rest, retry


def _number(key: str, value: str, kind: type[int] | type[float]) -> int | float:
    try:
        number = kind(str(value).strip())
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigurationError(
            f"storage option {key}={value!r}: give a {kind.__name__} of 0 or more")
    return number


def _duration(key: str, value: str) -> timedelta:
    text = str(value).strip()
    spans = _SPAN.findall(text)
    if not spans or _SPAN.sub("", text).strip() or any(unit not in _UNITS for _, unit in spans):
        raise ConfigurationError(
            f"storage option {key}={value!r}: give a duration such as '30s', '500ms', '2min' "
            "or '1m 30s'")
    return timedelta(seconds=sum(float(amount) * _UNITS[unit] for amount, unit in spans))
