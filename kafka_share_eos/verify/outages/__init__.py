"""Faults run as verify cells: a broker killed or restarted mid-batch, and whatever else is
registered in :mod:`~kafka_share_eos.verify.outages.registry`."""

from kafka_share_eos.verify.outages import brokers as brokers
from kafka_share_eos.verify.outages.registry import (
    OUTAGES,
    Outage,
    Scene,
    brokers_for,
    check_faults,
    register,
)

__all__ = ["OUTAGES", "Outage", "Scene", "brokers_for", "check_faults", "register"]
