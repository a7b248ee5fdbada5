"""``icml26-asbm bench``: what a sample costs. Wall-clock per generated batch of ASBM's default
sampler (Euler-Maruyama on the stage-2 score, one network call per step) at 1, 4 and 16 steps and
of its distilled one-step generator, against flow matching's Euler sampler at the same step counts,
on networks of the same family and width, as ratios measured in one run (best of ``repeats``,
device-synchronised, one CPU thread).

The paper's point is quality at few steps (the demo's verdict); this bench says what one step
of each sampler costs, so a quality gap at equal steps can be read as a gap at equal compute."""

import json
from dataclasses import dataclass

import torch

from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Sampling time per batch: ASBM (and its distilled generator) against flow matching."""

    n: int = 2048
    """Samples per batch (2-D moons)."""
    steps: tuple[int, ...] = (1, 4, 16)
    """Sampling steps (network calls) to time."""
    hidden: int = 256
    """Width of every network (the demo's 2-D setting)."""
    repeats: int = 3
    """Best of this many timings."""

    def validate(self) -> None:
        if self.n < 1 or self.hidden < 1 or self.repeats < 1 or not self.steps:
            raise ValueError("--n, --hidden and --repeats must be >= 1 and --steps non-empty")
        if any(s < 1 for s in self.steps) or 1 not in self.steps:
            raise ValueError(f"--steps must be >= 1 and include 1, got {self.steps}")


def run_bench(cfg: BenchConfig) -> dict:
    """Measure, print and return the timings and ratios (JSON)."""
    from icml26.asbm.asbm import ASBM
    from icml26.asbm.baselines import FlowMatching
    from icml26.asbm.nets import MLP
    from icml26.asbm.sde import VPSDE, GaussianEnergy

    cfg.validate()
    device = resolve_device(cfg.device)
    shape = (2,)

    def net(out_mult: int, time: bool):
        return MLP(shape, cfg.hidden, out_mult=out_mult, time=time)

    torch.manual_seed(0)
    energy = GaussianEnergy(1.0)
    asbm = ASBM(shape, VPSDE(), energy, u_net=net(1, True), h_net=net(1, False),
                bridge_net=net(1, True), generator=net(1, False)).to(device)  # fmt: skip
    cfm = FlowMatching(shape, energy, "independent", net(1, True)).to(device)
    g = torch.Generator().manual_seed(0)
    report: dict = {"device": device, "n": cfg.n, "seconds per batch": {}, "ASBM / CFM": {}}
    times = report["seconds per batch"]
    with torch_threads(1, device), torch.no_grad():
        for s in cfg.steps:
            times[f"ASBM, steps={s}"] = best_time(
                lambda s=s: asbm.sample(cfg.n, s, generator=g), cfg.repeats, device, warmup=1
            )
            times[f"CFM, steps={s}"] = best_time(
                lambda s=s: cfm.sample(cfg.n, s, generator=g), cfg.repeats, device, warmup=1
            )
            report["ASBM / CFM"][f"steps={s}"] = (
                times[f"ASBM, steps={s}"] / times[f"CFM, steps={s}"]
            )
        times["ASBM distilled, 1 step"] = best_time(
            lambda: asbm.sample_distilled(cfg.n, g), cfg.repeats, device, warmup=1
        )
    report["ASBM distilled / CFM 1 step"] = times["ASBM distilled, 1 step"] / times["CFM, steps=1"]
    print(json.dumps(report, indent=2))
    return report
