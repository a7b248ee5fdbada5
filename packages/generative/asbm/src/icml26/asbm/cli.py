"""Command line: ``icml26-asbm demo [--quick]``, ``train``, ``evaluate``, ``bench`` and
``control``.

Also ``python -m icml26.asbm``.
"""

from icml26.asbm.bench import BenchConfig, run_bench
from icml26.asbm.controls import ControlConfig, run_control
from icml26.asbm.demo import run_demo
from icml26.asbm.study import DemoConfig
from icml26.asbm.train import EvaluateConfig, TrainConfig, run_evaluate, run_train
from icml26.testing.command import dispatch

DESCRIPTION = "Adjoint Schrödinger Bridge Matching (arXiv 2602.15396)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainConfig, run_train),
    "evaluate": (EvaluateConfig, run_evaluate),
    "bench": (BenchConfig, run_bench),
    "control": (ControlConfig, run_control),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-asbm", DESCRIPTION, COMMANDS, argv)
