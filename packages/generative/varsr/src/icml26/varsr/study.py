"""``icml26-varsr demo``: VAR super-resolution with HIT and DPO against bicubic and ESPCN.

Per seed, on 32 x 32 patches of the training images (x4: 8 x 8 LR inputs):
- tokenizers: HIT (prefix and consistency terms) and plain multi-scale RQ, same steps;
- VAR-RQ (all scales predicted), VAR-HIT (the LR image's own tokens given as the first scales),
  VAR-HIT+DPO (``dpo_steps`` more with CE + lambda DPO) and VAR-HIT trained the same extra steps
  with CE only (the lambda = 0 ablation at equal budget);
- ESPCN trained for more steps than the method's whole pipeline (tokenizer + VAR + DPO);
  bicubic, and bicubic on the VAR arms' 8-px tiles.
Held-out images (astronaut, coffee, chelsea, camera, rocket), tiled: x4 PSNR / SSIM on Y; for the
HIT models also the x2 image of the same pass against the x2-downsampled ground truth (bicubic
from the LR image as its baseline), cross-scale consistency PSNR(down2(x4), x2), tokenizer
reconstruction PSNR, prefix agreement and codebook usage per scale.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from icml26.testing.checks import integer, number
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

GRID = 96
"""Side of the held-out crop shown in the picture grid (HR pixels)."""


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """VAR-SR (HIT, DPO) vs bicubic and ESPCN on held-out natural images, x4 and x2.

    ``--quick``: smoke run: one seed, a few steps, one held-out image."""

    seeds: int = 3
    tokenizer_steps: int = 800
    var_steps: int = 600
    dpo_steps: int = 100
    """Extra steps of VAR-HIT with CE + lambda DPO (and of the lambda = 0 ablation, CE only)."""
    espcn_steps: int = 3000
    """ESPCN's steps: more than the method's whole pipeline, at a fraction of its compute."""
    dpo_weight: float = 0.5
    """lambda of the DPO term."""
    dpo_beta: float = 0.1
    batch: int = 32
    lr: float = 1e-3

    def check(self) -> None:
        if not self.quick and self.seeds < 2:
            raise ValueError("--seeds must be >= 2 (an interval needs two)")
        for name in ("tokenizer_steps", "var_steps", "espcn_steps", "batch"):
            integer(f"--{name.replace('_', '-')}", getattr(self, name), low=1)
        integer("--dpo-steps", self.dpo_steps, low=0)
        number("--dpo-weight", self.dpo_weight, low=0)
        number("--dpo-beta", self.dpo_beta, above=0)
        number("--lr", self.lr, above=0)

    def quick_settings(self) -> dict:
        return dict(seeds=1, tokenizer_steps=3, var_steps=2, dpo_steps=2, espcn_steps=2,
                       batch=4)  # fmt: skip


def experiment(cfg: DemoConfig, progress: bool = True) -> dict:
    """Train every arm per seed and evaluate on the held-out images."""
    from icml26.varsr.data import load_data

    cfg.check()
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    data = load_data()
    train = data.train.to(device)
    # a smoke run scores one 128 x 128 crop of one held-out image
    test = ({k: v[:, :128, :128] for k, v in list(data.test.items())[:1]} if cfg.quick
            else data.test)  # fmt: skip
    runs: list[dict] = []
    bar = tqdm(total=cfg.seeds * 6, desc="varsr demo", disable=not progress)
    grid: dict[str, torch.Tensor] = {}
    name0 = next(iter(test))
    grid_hr = test[name0][:, :GRID, :GRID]
    for seed in range(cfg.seeds):
        torch.manual_seed(seed)
        arms, tok_stats = _train_arms(cfg, train, test, seed, device, bar)
        for arm, model in arms:
            if seed == 0 and model != "bicubic-tiled":  # the picture grid: seed 0's models
                grid.update(_grid_pictures(arm, model, grid_hr.to(device)))
            extra = (
                {"tokenizer": tok_stats["RQ" if arm == "VAR-RQ" else "HIT"]}
                if arm.startswith("VAR")
                else {}
            )
            runs.append({**_evaluate_arm(arm, seed, model, test, device), **extra})
        bar.update(2)
    bar.close()
    grid["HR"] = grid_hr
    return {"runs": runs, "device": device, "test_images": list(test),
            "grid": {k: v.cpu() for k, v in grid.items()}, "grid_image": name0}  # fmt: skip


def _train_arms(cfg: DemoConfig, train, test, seed: int, device: str, bar) -> tuple:
    """One seed's arms, each trained on ``train``: the tokenizers (HIT and plain RQ), the VAR
    arms and the ESPCN baseline; returns ((arm name, model), ...) and the tokenizers' ceilings
    measured on the held-out images' tiles."""
    from icml26.varsr.baselines import ESPCN
    from icml26.varsr.data import bicubic_up, crop_to, downsample, patches
    from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig, prefix_agreement
    from icml26.varsr.train import (
        FitConfig,
        espcn_objective,
        fit,
        tokenizer_objective,
        var_objective,
    )
    from icml26.varsr.var import VARConfig, VARTransformer

    def fitc(steps, seed):
        return FitConfig(steps=steps, batch=cfg.batch, lr=cfg.lr, seed=seed)

    toks = {}
    for name, hit in (("HIT", True), ("RQ", False)):
        tok = MultiScaleRQ(TokenizerConfig()).to(device)
        loss_fn, hook = tokenizer_objective(tok, hit=hit, steps=cfg.tokenizer_steps)
        fit(tok, train, loss_fn, fitc(cfg.tokenizer_steps, seed), hook=hook)
        toks[name] = tok.eval().requires_grad_(False)
        bar.update()
    # measured on the held-out images' 32 x 32 tiles: the reconstruction is the ceiling of
    # every VAR arm using that tokenizer
    probe = torch.cat([patches([crop_to(v, 32)], 32) for v in test.values()]).to(device)
    tok_stats = {name: {
        "reconstruction_psnr": _psnr(t.decode(t.encode(probe)), probe),
        # the prefix decodes of the full image's tokens against the downsampled patch
        **{f"prefix_psnr_x{f}": _psnr(_prefix_decode(t, probe, f), downsample(probe, f))
           for f in (2, 4)},
        # the baseline on the same tiles: what the ceiling has to clear
        "bicubic_psnr_x4": _psnr(bicubic_up(downsample(probe, 4), 4), probe),
        "prefix_agreement_x2": prefix_agreement(t, probe, 2),
        "prefix_agreement_x4": prefix_agreement(t, probe, 4),
        "codebook_usage": codebook_usage(t, probe),
    } for name, t in toks.items()}  # fmt: skip
    var_rq = VARTransformer(toks["RQ"], VARConfig(given_scales=0)).to(device)
    fit(var_rq, train, var_objective(var_rq), fitc(cfg.var_steps + cfg.dpo_steps, seed))
    bar.update()
    var_hit = VARTransformer(toks["HIT"], VARConfig()).to(device)
    fit(var_hit, train, var_objective(var_hit), fitc(cfg.var_steps, seed))
    var_dpo = copy.deepcopy(var_hit)
    var_dpo.tokenizer = [toks["HIT"]]
    fit(var_dpo, train, var_objective(var_dpo, cfg.dpo_weight, cfg.dpo_beta),
        fitc(cfg.dpo_steps, seed + 100))  # fmt: skip
    fit(var_hit, train, var_objective(var_hit), fitc(cfg.dpo_steps, seed + 100))
    bar.update()
    espcn = ESPCN().to(device)
    # a regression CNN is cheap: it gets more steps than the method's whole pipeline
    # (tokenizer, VAR and DPO stages) and still a fraction of its compute
    fit(espcn, train, espcn_objective(espcn), fitc(cfg.espcn_steps, seed))
    bar.update()
    arms = (("bicubic", "bicubic"), ("bicubic, 8-px tiles", "bicubic-tiled"),
            ("ESPCN", espcn.eval()), ("VAR-RQ", var_rq.eval()),
            ("VAR-HIT", var_hit.eval()), ("VAR-HIT+DPO", var_dpo.eval()))  # fmt: skip
    return arms, tok_stats


def _grid_pictures(arm: str, model, grid_hr: torch.Tensor) -> dict[str, torch.Tensor]:
    """The crop of the picture grid ``arm`` makes (bicubic also gives the LR input)."""
    from icml26.varsr.data import bicubic_up, downsample
    from icml26.varsr.upscale import upscale

    lr0 = downsample(grid_hr, 4)
    if model == "bicubic":
        lr_nearest = torch.nn.functional.interpolate(lr0, scale_factor=4)[0]
        return {"LR (nearest)": lr_nearest, arm: bicubic_up(lr0, 4)[0]}
    return {arm: upscale(model, lr0)[0]}


def _evaluate_arm(arm: str, seed: int, model, test: dict, device: str) -> dict:
    """PSNR / SSIM / MS-SSIM at x4, PSNR at x2 and (VAR arms) x2-x4 consistency, averaged over
    the held-out images."""
    from icml26.varsr.data import bicubic_up, downsample, ms_ssim_y, psnr_ssim
    from icml26.varsr.upscale import upscale

    psnr4, ssim4, msssim4, psnr2, cons = [], [], [], [], []
    for hr in test.values():
        hr = hr.to(device)
        lr = downsample(hr, 4)
        if model == "bicubic":
            sr4, sr2 = bicubic_up(lr, 4), bicubic_up(lr, 2)
        elif model == "bicubic-tiled":  # the seams the VAR arms' 8-px tiles pay
            sr4 = upscale(lambda t: bicubic_up(t, 4), lr, tile=8)
            sr2 = None
        elif hasattr(model, "generate"):
            res = upscale(model, lr, return_scales=True)
            sr4, sr2 = res[4], res[2]
        else:  # a regression CNN's x2: its x4 output downsampled (any x4 method has one)
            sr4 = upscale(model, lr)
            sr2 = downsample(sr4.clamp(0, 1), 2)
        p, s = psnr_ssim(sr4[0].cpu(), hr.cpu(), 4)
        psnr4.append(p), ssim4.append(s)
        ms = ms_ssim_y(sr4[0].cpu(), hr.cpu(), 4)
        if ms is not None:
            msssim4.append(ms)
        if sr2 is not None:
            psnr2.append(psnr_ssim(sr2[0].cpu(), downsample(hr, 2)[0].cpu(), 2)[0])
            if hasattr(model, "generate"):  # a derived x2 is consistent by construction
                cons.append(psnr_ssim(downsample(sr4.clamp(0, 1), 2)[0].cpu(),
                                      sr2[0].cpu(), 2)[0])  # fmt: skip
    row = {"arm": arm, "seed": seed, "psnr_x4": sum(psnr4) / len(psnr4),
           "ssim_x4": sum(ssim4) / len(ssim4)}  # fmt: skip
    if msssim4:
        row["ms_ssim_x4"] = sum(msssim4) / len(msssim4)
    if psnr2:
        row["psnr_x2"] = sum(psnr2) / len(psnr2)
    if cons:
        row["consistency_x2"] = sum(cons) / len(cons)
    return row


@torch.no_grad()
def codebook_usage(tok, x: torch.Tensor) -> dict[str, float]:
    """Share of the codebook each scale uses on images ``x``: {"side": share}."""
    return {str(i.shape[-1]): len(torch.unique(i)) / tok.cfg.codebook for i in tok.encode(x)}


@torch.no_grad()
def _prefix_decode(tok, x: torch.Tensor, factor: int) -> torch.Tensor:
    idx = tok.encode(x)
    side = idx[-1].shape[-1] // factor
    return tok.decode([i for i in idx if i.shape[-1] <= side])


def _psnr(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(-10 * torch.log10(((a - b) ** 2).mean()))
