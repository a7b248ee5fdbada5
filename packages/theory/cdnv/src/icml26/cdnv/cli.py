"""Command line: ``icml26-cdnv demo [--quick]``, ``measure FEATURES.npz``, ``bench`` (also
``python -m icml26.cdnv``)."""

import sys

import tyro

from icml26.cdnv.bench import BenchConfig, run_bench
from icml26.cdnv.demo import DemoConfig, run_demo
from icml26.cdnv.measure_cli import MeasureConfig, run_measure


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "measure": MeasureConfig, "bench": BenchConfig},
        prog="icml26-cdnv",
        description="Directional CDNV and few-shot bounds (arXiv 2603.03530).",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        if isinstance(cfg, DemoConfig):
            run_demo(cfg)
        elif isinstance(cfg, BenchConfig):
            run_bench(cfg)
        else:
            run_measure(cfg)
    except ValueError as e:
        print(f"icml26-cdnv: error: {e}", file=sys.stderr)
        return 2
    return 0
