"""Command line: ``icml26-entquant demo [--quick]``, ``bench`` and ``compress``.

Also ``python -m icml26.entquant``.
"""

from icml26.entquant.bench import BenchConfig, run_bench
from icml26.entquant.compress import CompressConfig, run_compress
from icml26.entquant.demo import run_demo
from icml26.entquant.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "EntQuant (arXiv 2601.22787): demo, benchmark, compress a checkpoint."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "bench": (BenchConfig, run_bench),
    "compress": (CompressConfig, run_compress),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-entquant", DESCRIPTION, COMMANDS, argv)
