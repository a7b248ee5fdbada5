"""Command line: ``icml26-lucid demo [--quick]`` and ``icml26-lucid bench``.

Also ``python -m icml26.lucid``.
"""

import sys

import tyro

from icml26.lucid.bench import BenchConfig, run_bench
from icml26.lucid.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig},
        prog="icml26-lucid",
        description="LUCID attention (arXiv 2602.10410): demo and benchmark.",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        if isinstance(cfg, DemoConfig):
            run_demo(cfg)
        else:
            run_bench(cfg)
    except ValueError as e:
        print(f"icml26-lucid: error: {e}", file=sys.stderr)
        return 2
    return 0
