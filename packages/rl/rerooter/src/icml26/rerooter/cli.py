"""Command line: ``icml26-rerooter demo [--quick]``, ``train``, ``evaluate``, ``bench`` and
``bound``.

Also ``python -m icml26.rerooter``.
"""

import sys

import tyro

from icml26.rerooter.bench import BenchConfig, run_bench
from icml26.rerooter.bound import BoundConfig, run_bound
from icml26.rerooter.demo import DemoConfig, run_demo
from icml26.rerooter.train import EvaluateConfig, TrainConfig, run_evaluate, run_train


def main(argv: list[str] | None = None) -> int:
    cfg = tyro.extras.subcommand_cli_from_dict(
        {
            "demo": DemoConfig,
            "train": TrainConfig,
            "evaluate": EvaluateConfig,
            "bench": BenchConfig,
            "bound": BoundConfig,
        },
        prog="icml26-rerooter",
        description="√LTS tree search with learned rerooters, LTS and PHS* (ICML 2026).",
        args=sys.argv[1:] if argv is None else argv,
    )
    runners = {
        DemoConfig: run_demo,
        TrainConfig: run_train,
        EvaluateConfig: run_evaluate,
        BenchConfig: run_bench,
        BoundConfig: run_bound,
    }
    try:
        runners[type(cfg)](cfg)
    except ValueError as e:
        print(f"icml26-rerooter: error: {e}", file=sys.stderr)
        return 2
    return 0
