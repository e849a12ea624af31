"""The chaos verifier behind ``kafka-share-eos verify``.

It produces records with unique ids and amounts, runs a pipeline per strategy and sink as a
separate Spark process, kills it at named crash points (:mod:`kafka_share_eos.faults`) and at
random moments, restarts it on the same checkpoint until the share group is drained, then counts
per record how many times its effect landed in the sinks. See docs/verify.md.
"""

from __future__ import annotations

from kafka_share_eos.proving_ground.verify.known_targets import SAFE_TARGETS, TARGETS
from kafka_share_eos.proving_ground.verify.matrix import CellResult, MatrixResult, run_matrix
from kafka_share_eos.proving_ground.verify.matrix_options import MatrixOptions
from kafka_share_eos.proving_ground.verify.points import (
    COMMON_POINTS,
    DESCRIPTIONS,
    RANDOM_KILL,
    points_of,
)
from kafka_share_eos.proving_ground.verify.score import Score
from kafka_share_eos.proving_ground.verify.spec import Mix, RunResult, RunSpec

__all__ = [
    "COMMON_POINTS",
    "DESCRIPTIONS",
    "RANDOM_KILL",
    "SAFE_TARGETS",
    "TARGETS",
    "CellResult",
    "MatrixOptions",
    "MatrixResult",
    "Mix",
    "RunResult",
    "RunSpec",
    "Score",
    "points_of",
    "run_matrix",
]
