"""Command line: ``icml26-streamflow demo [--quick]`` and ``icml26-streamflow bench``.

Also ``python -m icml26.streamflow``.
"""

import sys

import tyro

from icml26.streamflow.bench import BenchConfig, run_bench
from icml26.streamflow.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig},
        prog="icml26-streamflow",
        description="StreamFlow: streaming, time-step-batched rectified-flow inference.",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        run_demo(cfg) if isinstance(cfg, DemoConfig) else run_bench(cfg)
    except ValueError as e:
        print(f"icml26-streamflow: error: {e}", file=sys.stderr)
        return 2
    return 0
