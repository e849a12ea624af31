"""The soak's faults: every family, by name, and an unknown name refused with the known
ones."""

from __future__ import annotations

import pytest

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.soak.strikes import STRIKES, check_strikes


def test_every_family_has_a_fault() -> None:
    assert list(STRIKES) == ["pipeline-kill", "broker-kill", "postgres-kill", "store-kill",
                             "store-blackhole", "store-503", "delta-maintenance"]
    # The outages that stay in force are healed; the others are over once struck.
    assert {name for name, strike in STRIKES.items() if strike.lasts} == {
        "broker-kill", "store-kill", "store-blackhole", "store-503"}


def test_an_unknown_fault_is_refused_with_the_known_ones() -> None:
    check_strikes(["store-503", "pipeline-kill"])
    with pytest.raises(ConfigurationError, match="unknown soak fault store-melt; known: "
                                                 "pipeline-kill, broker-kill"):
        check_strikes(["store-melt", "store-503"])
