"""Command line: ``icml26-rerooter demo [--quick]``, ``train``, ``evaluate``, ``bench`` and
``bound``.

Also ``python -m icml26.rerooter``.
"""

from icml26.rerooter.bench import BenchConfig, run_bench
from icml26.rerooter.bound import BoundConfig, run_bound
from icml26.rerooter.demo import run_demo
from icml26.rerooter.study import DemoConfig
from icml26.rerooter.train import EvaluateConfig, TrainConfig, run_evaluate, run_train
from icml26.testing.command import dispatch

DESCRIPTION = "√LTS tree search with learned rerooters, LTS and PHS* (ICML 2026)."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainConfig, run_train),
    "evaluate": (EvaluateConfig, run_evaluate),
    "bench": (BenchConfig, run_bench),
    "bound": (BoundConfig, run_bound),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-rerooter", DESCRIPTION, COMMANDS, argv)
