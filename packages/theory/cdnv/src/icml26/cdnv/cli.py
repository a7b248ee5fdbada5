"""Command line: ``icml26-cdnv demo [--quick]`` (also ``python -m icml26.cdnv``)."""

import sys

import tyro

from icml26.cdnv.demo import DemoConfig, run_demo
from icml26.cdnv.measure_cli import MeasureConfig, run_measure


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "measure": MeasureConfig},
        prog="icml26-cdnv",
        description="Directional CDNV and few-shot bounds (arXiv 2603.03530).",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        run_demo(cfg) if isinstance(cfg, DemoConfig) else run_measure(cfg)
    except ValueError as e:
        print(f"icml26-cdnv: error: {e}", file=sys.stderr)
        return 2
    return 0
