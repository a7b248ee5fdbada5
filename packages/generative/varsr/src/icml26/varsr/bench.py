"""``icml26-varsr bench``: one pass for x2 and x4 against one pass per scale.

A HIT model's single generation pass yields the x2 image (its prefix decode) and the x4 image.
Without the hierarchy, each output scale needs its own run: the baseline runs the x2 part of the
generation (scales up to the x2 side) and the full x4 generation separately, as two single-scale
models would. Tiles per second of both, in one process, and their ratio."""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch

from icml26.testing.command import DeviceOption
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Timing of one-pass multi-scale generation vs one pass per scale."""

    tiles: int = 256
    """LR tiles (8 x 8 with the default tokenizer) per call."""
    repeats: int = 5

    def check(self) -> None:
        if self.tiles < 1 or self.repeats < 1:
            raise ValueError("--tiles and --repeats must be >= 1")


def run_bench(cfg: BenchConfig) -> dict:
    from icml26.testing.results import resolve_device
    from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig
    from icml26.varsr.var import VARConfig, VARTransformer

    cfg.check()
    device = resolve_device(cfg.device)
    with torch_threads(1, device):  # restored after: the caller's setting is theirs
        torch.manual_seed(0)
        tok = MultiScaleRQ(TokenizerConfig()).to(device)
        tok(torch.rand(8, 3, 32, 32, device=device))
        tok.eval()
        var = VARTransformer(tok, VARConfig()).to(device).eval()
        lr = torch.rand(cfg.tiles, 3, var.lr_side, var.lr_side, device=device)
        half = var.scales[-1] // 2  # the token side of the x2 output
        one = best_time(lambda: var.generate(lr, return_scales=True), cfg.repeats, device, warmup=1)
        x2_only = best_time(lambda: var.generate(lr, stop_at=half), cfg.repeats, device, warmup=1)
        x4_only = best_time(lambda: var.generate(lr), cfg.repeats, device, warmup=1)
        report = {"device": device, "tiles": cfg.tiles,
                  "one_pass_tiles_per_s": cfg.tiles / one,
                  "per_scale_tiles_per_s": cfg.tiles / (x2_only + x4_only),
                  "speedup_one_pass_vs_per_scale": (x2_only + x4_only) / one}  # fmt: skip
        print(json.dumps(report, indent=2))
        return report
