"""Command line: ``icml26-cdnv demo [--quick]``, ``measure FEATURES.npz``, ``bench`` (also
``python -m icml26.cdnv``)."""

from icml26.cdnv.bench import BenchConfig, run_bench
from icml26.cdnv.demo import run_demo
from icml26.cdnv.measure_cli import MeasureConfig, run_measure
from icml26.cdnv.study import DemoConfig
from icml26.testing.command import dispatch

DESCRIPTION = "Directional CDNV and few-shot bounds (arXiv 2603.03530)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "measure": (MeasureConfig, run_measure),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-cdnv", DESCRIPTION, COMMANDS, argv)
