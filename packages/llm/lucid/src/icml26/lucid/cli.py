"""Command line: ``icml26-lucid demo [--quick]`` and ``icml26-lucid bench``.

Also ``python -m icml26.lucid``.
"""

from icml26.lucid.bench import BenchConfig, run_bench
from icml26.lucid.demo import run_demo
from icml26.lucid.study import DemoConfig
from icml26.testing.command import dispatch


def main(argv: list[str] | None = None) -> int:
    return dispatch(
        "icml26-lucid",
        "LUCID attention (arXiv 2602.10410): demo and benchmark.",
        {
            "demo": (DemoConfig, run_demo),
            "bench": (BenchConfig, run_bench),
        },
        argv,
    )
