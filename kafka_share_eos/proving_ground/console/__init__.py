"""Quiet, readable output for local runs: the demo and the examples.

:class:`RunConsole` prints one line per stage, progress bars for long waits and the results,
and sends Spark's, the JVM's and librdkafka's logs to a file named at the end;
:class:`CrashOnce` fails a pipeline once after a batch reached its sinks, and
:meth:`RunConsole.drain` restarts it, printing the crash as one line.
"""

from kafka_share_eos.proving_ground.console.cause import failure_cause
from kafka_share_eos.proving_ground.console.crash import CrashOnce, SimulatedCrash
from kafka_share_eos.proving_ground.console.terminal import RunConsole

__all__ = ["CrashOnce", "RunConsole", "SimulatedCrash", "failure_cause"]
