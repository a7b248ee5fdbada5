"""Command line: ``icml26-td demo [--quick]`` and ``icml26-td bench``.

Also ``python -m icml26.td``.
"""

from icml26.td.bench import BenchConfig, run_bench
from icml26.td.demo import run_demo
from icml26.td.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "TD(0) with exponential step sizes (arXiv 2603.02577)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-td", DESCRIPTION, COMMANDS, argv)
