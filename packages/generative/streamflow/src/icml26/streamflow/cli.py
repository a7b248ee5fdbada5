"""Command line: ``icml26-streamflow demo [--quick]`` and ``icml26-streamflow bench``.

Also ``python -m icml26.streamflow``.
"""

from icml26.streamflow.bench import BenchConfig, run_bench
from icml26.streamflow.demo import run_demo
from icml26.streamflow.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "StreamFlow: streaming, time-step-batched rectified-flow inference."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-streamflow", DESCRIPTION, COMMANDS, argv)
