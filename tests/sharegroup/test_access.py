"""How refusals of a secured cluster are told: a sign-in refused for a while (not once, not
twice hours apart) fails the client, and each ACL refusal names what to grant. Pure logic: the
refusals are made here, the clock is set by the test; tests/kafka/test_secured.py runs them on a
secured cluster."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from kafka_share_eos.errors import KafkaAccessError
from kafka_share_eos.sharegroup import access
from kafka_share_eos.sharegroup.access import SignInWatch, access_error

CONFIG = {"sasl.username": "etl", "sasl.password": "s3cret", "sasl.mechanism": "SCRAM-SHA-512",
          "group.id": "orders-eos"}
REFUSED = KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: invalid credentials")


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(access.time, "monotonic", clock)
    return clock


def refusals(watch: SignInWatch, clock: Clock, *at: float) -> None:
    for moment in at:
        clock.now = moment
        watch(REFUSED)


def test_a_lasting_refusal_fails_naming_the_user_never_the_password(clock: Clock) -> None:
    watch = SignInWatch()
    refusals(watch, clock, 100.0, 100.4, 101.0)
    watch.raise_refusal(CONFIG)  # a credential may still be on its way: not yet
    refusals(watch, clock, 102.5)
    with pytest.raises(KafkaAccessError, match="refused the sign-in of user 'etl'") as refused:
        watch.raise_refusal(CONFIG)
    assert "s3cret" not in str(refused.value)


def test_refusals_far_apart_or_before_a_success_are_not_one_that_lasts(clock: Clock) -> None:
    watch = SignInWatch()
    refusals(watch, clock, 100.0, 100.5, 200.0, 200.5)  # at start, then a broker's restart
    watch.raise_refusal(CONFIG)
    refusals(watch, clock, 300.0, 301.0)
    watch.clear()  # the client got through
    refusals(watch, clock, 302.5)
    watch.raise_refusal(CONFIG)
    clock.now = 400.0  # refusals stopped long ago
    watch.raise_refusal(CONFIG)
    with pytest.raises(KafkaAccessError):
        watch.raise_refusal(CONFIG, lasting=False)  # the caller gave up already


def test_acl_refusals_name_the_resource_and_the_grant() -> None:
    group = access_error(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED), CONFIG)
    assert group is not None and "grant it READ on GROUP orders-eos" in str(group)
    topic = access_error(KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), CONFIG, ["orders"])
    assert topic is not None and "may not read topic(s) orders" in str(topic)
    cluster = KafkaError(KafkaError.CLUSTER_AUTHORIZATION_FAILED)
    assert access_error(cluster, CONFIG, ["orders"]) is None
    written = access_error(cluster, CONFIG, ["dead"], writes=True)
    assert written is not None and "may not write topic(s) dead" in str(written)
    assert access_error(KafkaError(KafkaError._TRANSPORT), CONFIG) is None


def test_a_refusal_the_client_gave_no_reason_for_is_named_by_its_code() -> None:
    bare = KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED, "ShareFetch failed for orders-c [1]: ")
    refused = access_error(bare, CONFIG, ["orders-c"])

    assert refused is not None
    assert "(ShareFetch failed for orders-c [1]: TOPIC_AUTHORIZATION_FAILED)" in str(refused)
