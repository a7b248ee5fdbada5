"""Command line: ``icml26-santa demo [--quick]`` and ``icml26-santa bench``.

Also ``python -m icml26.santa``.
"""

from icml26.santa.bench import BenchConfig, run_bench
from icml26.santa.demo import run_demo
from icml26.santa.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "SANTA sampled value aggregation for decode attention (arXiv 2605.01910)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-santa", DESCRIPTION, COMMANDS, argv)
