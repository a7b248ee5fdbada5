"""Command line: ``icml26-td demo [--quick]`` and ``icml26-td bench``.

Also ``python -m icml26.td``.
"""

import sys

import tyro

from icml26.td.bench import BenchConfig, run_bench
from icml26.td.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig},
        prog="icml26-td",
        description="TD(0) with exponential step sizes (arXiv 2603.02577).",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        if isinstance(cfg, DemoConfig):
            run_demo(cfg)
        else:
            run_bench(cfg)
    except ValueError as e:
        print(f"icml26-td: error: {e}", file=sys.stderr)
        return 2
    return 0
