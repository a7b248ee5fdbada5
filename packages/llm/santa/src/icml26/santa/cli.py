"""Command line: ``icml26-santa demo [--quick]`` and ``icml26-santa bench``.

Also ``python -m icml26.santa``.
"""

import sys

import tyro

from icml26.santa.bench import BenchConfig, run_bench
from icml26.santa.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig},
        prog="icml26-santa",
        description="SANTA sampled value aggregation for decode attention (arXiv 2605.01910).",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        run_demo(cfg) if isinstance(cfg, DemoConfig) else run_bench(cfg)
    except ValueError as e:
        print(f"icml26-santa: error: {e}", file=sys.stderr)
        return 2
    return 0
