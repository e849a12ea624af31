"""Refusals by a secured cluster, told as what was refused and what to grant.

librdkafka reports a refused sign-in (a wrong password, an unknown user) only to the client's
``error_cb``, and keeps retrying: a consumer polls nothing and a metadata request times out as
a "transport failure". :class:`SignInWatch` is that callback; it keeps the refusal so that the
caller can fail with it. An ACL's refusal arrives as the error of a call, named by its code.
Error texts name the user, the group and the topics, never a password.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError

from kafka_share_eos.errors import KafkaAccessError

SIGN_IN_REFUSED = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
REFUSAL_LASTS_S = 2.0
"""A sign-in refused again this long after the first refusal is not a credential still on its
way to the broker that answered (a user created a moment before)."""
STREAK_GAP_S = 10.0
"""Refusals further apart than this (librdkafka retries within a second or so) are not one
lasting refusal."""


def _user(config: Mapping[str, Any]) -> str:
    name = config.get("sasl.username")
    return f"user {name!r}" if name else "the client"


def _reason(error: KafkaError) -> str:
    """What the client said of ``error``; its code's name where the client left the reason
    empty (librdkafka's "ShareFetch failed for orders-c [1]: " names no cause)."""
    text = error.str().strip()
    if not text or text.endswith(":"):
        return f"{text} {error.name()}".strip()
    return text


def access_error(
    error: KafkaError, config: Mapping[str, Any], topics: Sequence[str] = (), *,
    writes: bool = False,
) -> KafkaAccessError | None:
    """The access error ``error`` is, naming what was refused (reading, or with ``writes``
    writing, ``topics``); None when it is not one."""
    code, user = error.code(), _user(config)
    if code in SIGN_IN_REFUSED:
        mechanism = config.get("sasl.mechanism", "its SASL mechanism")
        return KafkaAccessError(
            f"the brokers refused the sign-in of {user} ({mechanism}): {_reason(error)}; check "
            "kafka.sasl.username and kafka.sasl.password"
        )
    if code == KafkaError.GROUP_AUTHORIZATION_FAILED:
        group = config.get("group.id", "?")
        return KafkaAccessError(
            f"{user} may not read share group {group!r} ({_reason(error)}): grant it READ on "
            f"GROUP {group}"
        )
    if code == KafkaError.CLUSTER_AUTHORIZATION_FAILED and writes:
        # An idempotent producer's id needs WRITE on a topic (or IDEMPOTENT_WRITE on the
        # cluster): without WRITE on its topic the producer is refused before any record.
        code = KafkaError.TOPIC_AUTHORIZATION_FAILED
    if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        named = ", ".join(topics) or "the subscribed topics"
        verb, operation = ("write", "WRITE") if writes else ("read", "READ")
        return KafkaAccessError(
            f"{user} may not {verb} topic(s) {named} ({_reason(error)}): grant it {operation} and "
            "DESCRIBE on each TOPIC"
        )
    return None


class SignInWatch:
    """A client's ``error_cb`` that keeps the current streak of sign-in refusals: refusals
    further apart than :data:`STREAK_GAP_S` (one at start, another at a broker's restart hours
    later) are separate streaks, and :meth:`clear` ends one once the client got through."""

    def __init__(self) -> None:
        self._first = self._latest = 0.0
        self._refusal: KafkaError | None = None
        self._lock = threading.Lock()

    def __call__(self, error: KafkaError) -> None:
        if error.code() not in SIGN_IN_REFUSED:
            return
        with self._lock:
            now = time.monotonic()
            if self._refusal is None or now - self._latest > STREAK_GAP_S:
                self._first = now
            self._latest = now
            self._refusal = error

    def clear(self) -> None:
        """The client got through: the refusals so far were passing."""
        with self._lock:
            self._refusal = None

    def raise_refusal(self, config: Mapping[str, Any], *, lasting: bool = True) -> None:
        """Raise the refused sign-in if refusals have lasted :data:`REFUSAL_LASTS_S` and still
        come (with ``lasting=False``, if one was seen at all: the caller gave up already).

        Raises:
            KafkaAccessError: the brokers refused the sign-in.
        """
        with self._lock:
            refusal = self._refusal
            now = time.monotonic()
            lasted = (self._latest - self._first >= REFUSAL_LASTS_S
                      and now - self._latest <= STREAK_GAP_S)
        if refusal is not None and (lasted or not lasting):
            refused = access_error(refusal, config)
            assert refused is not None
            raise refused
