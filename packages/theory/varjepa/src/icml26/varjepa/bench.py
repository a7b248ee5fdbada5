"""``icml26-varjepa bench``: what the variational objective costs. Seconds per pretraining step
of Var-T-JEPA against T-JEPA (the same encoder, predictor, masks and batch; Var-T-JEPA adds the
posterior heads, the reparameterised samples and the KL terms), and rows embedded per second by
each, as ratios measured in one run (best of ``repeats``, device-synchronised, one CPU thread)."""

import json
from dataclasses import dataclass

import torch

from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Var-T-JEPA's pretraining step and embedding against T-JEPA's, as ratios."""

    dataset: str = "breast_cancer"
    """A bundled table (see ``icml26.varjepa.data.TABLES``)."""
    steps: int = 20
    """Pretraining steps per timing."""
    batch_size: int = 128
    dim: int = 64
    depth: int = 2
    repeats: int = 3
    """Best of this many timings."""

    def validate(self) -> None:
        if min(self.steps, self.batch_size, self.dim, self.depth, self.repeats) < 1:
            raise ValueError("--steps, --batch-size, --dim, --depth and --repeats must be >= 1")


def run_bench(cfg: BenchConfig) -> dict:
    """Measure, print and return the timings and ratios (JSON)."""
    from icml26.varjepa.data import load_table
    from icml26.varjepa.model import TJEPA, ModelConfig, VarTJEPA
    from icml26.varjepa.tokenizer import FeatureTokenizer
    from icml26.varjepa.train import TrainConfig, pretrain

    cfg.validate()
    device = resolve_device(cfg.device)
    table = load_table(cfg.dataset)
    tok = FeatureTokenizer().fit(table.features)
    rows = tok.transform(table.features)
    n_num, cards = len(tok.numerical_), tok.cardinalities
    model_cfg = ModelConfig(dim=cfg.dim, depth=cfg.depth, predictor_dim=cfg.dim)
    train_cfg = TrainConfig(
        steps=cfg.steps, batch_size=cfg.batch_size, progress=False, log_every=cfg.steps
    )
    builders = {
        "T-JEPA": lambda: TJEPA(n_num, cards, model_cfg),
        "Var-T-JEPA": lambda: VarTJEPA(n_num, cards, model_cfg),
    }
    report: dict = {"device": device, "dataset": cfg.dataset, "rows": len(rows)}
    on_device = rows.to(device)
    with torch_threads(1, device):
        for name, build in builders.items():
            torch.manual_seed(0)
            model = build().to(device)
            step = best_time(lambda m=model: pretrain(m, rows, train_cfg), cfg.repeats, device)
            with torch.no_grad():
                embed = best_time(lambda m=model: m.embed(on_device), cfg.repeats, device, warmup=1)
            report[name] = {
                "seconds per step": step / cfg.steps,
                "rows embedded per s": len(rows) / embed,
            }
    var, base = report["Var-T-JEPA"], report["T-JEPA"]
    report["step time, Var-T-JEPA / T-JEPA"] = var["seconds per step"] / base["seconds per step"]
    report["embedding throughput, Var-T-JEPA / T-JEPA"] = (
        var["rows embedded per s"] / base["rows embedded per s"]
    )
    print(json.dumps(report, indent=2))
    return report
