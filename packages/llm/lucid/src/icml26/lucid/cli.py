"""Command line: ``icml26-lucid demo [--quick]`` and ``icml26-lucid bench``.

Also ``python -m icml26.lucid``.
"""

from icml26.lucid.bench import BenchConfig, run_bench
from icml26.lucid.demo import run_demo
from icml26.lucid.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "LUCID attention (arXiv 2602.10410): demo and benchmark."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-lucid", DESCRIPTION, COMMANDS, argv)
