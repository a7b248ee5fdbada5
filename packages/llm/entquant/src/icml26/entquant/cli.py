"""Command line: ``icml26-entquant demo [--quick]``, ``bench`` and ``compress``.

Also ``python -m icml26.entquant``.
"""

import sys

import tyro

from icml26.entquant.bench import BenchConfig, run_bench
from icml26.entquant.compress import CompressConfig, run_compress
from icml26.entquant.demo import DemoConfig, run_demo


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {"demo": DemoConfig, "bench": BenchConfig, "compress": CompressConfig},
        prog="icml26-entquant",
        description="EntQuant (arXiv 2601.22787): demo, benchmark, compress a checkpoint.",
        args=sys.argv[1:] if argv is None else argv,
    )
    try:
        if isinstance(cfg, DemoConfig):
            run_demo(cfg)
        elif isinstance(cfg, BenchConfig):
            run_bench(cfg)
        else:
            run_compress(cfg)
    except ValueError as e:
        print(f"icml26-entquant: error: {e}", file=sys.stderr)
        return 2
    return 0
