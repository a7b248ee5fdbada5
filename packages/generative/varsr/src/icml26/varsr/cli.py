"""Command line: ``icml26-varsr demo [--quick]``, ``bench`` (also ``python -m icml26.varsr``)."""

from __future__ import annotations

import sys

import tyro

from icml26.varsr.bench import BenchConfig, run_bench
from icml26.varsr.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig},
        prog="icml26-varsr",
        description="VAR super-resolution with hierarchical tokenization and DPO.",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        {DemoConfig: run_demo, BenchConfig: run_bench}[type(cfg)](cfg)
    except ValueError as e:
        print(f"icml26-varsr: error: {e}", file=sys.stderr)
        return 2
    return 0
