"""Command line: ``icml26-varsr demo [--quick]`` (also ``python -m icml26.varsr``)."""

from __future__ import annotations

import sys

import tyro

from icml26.varsr.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig},
        prog="icml26-varsr",
        description="VAR super-resolution with hierarchical tokenization and DPO.",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        run_demo(cfg)
    except ValueError as e:
        print(f"icml26-varsr: error: {e}", file=sys.stderr)
        return 2
    return 0
