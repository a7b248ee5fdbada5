"""``icml26-asbm train`` and ``evaluate``: fit ASBM (stage 1, stage 2 and the distilled
generator) on a bundled data set or a .npy file of samples, save it as safetensors plus a JSON
config, and measure a saved model's samples against held-out data at several step counts."""

from dataclasses import dataclass
from pathlib import Path

import torch

from icml26.asbm.asbm import ASBM
from icml26.asbm.data import TOYS, digits, faces, load_array
from icml26.asbm.metrics import mmd, sliced_w2
from icml26.asbm.nets import TinyUNet
from icml26.asbm.sde import VPSDE, BrownianSDE, GaussianEnergy
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device


@dataclass(frozen=True)
class TrainConfig(DeviceOption):
    """Train ASBM (both stages) on a bundled data set and save a safetensors checkpoint."""

    out: Path = Path("runs/asbm/model")
    """Checkpoint directory (model.safetensors + config.json)."""
    data: str = "moons"
    """moons, 8gaussians, checkerboard, digits, faces, or a .npy file of your own (N, ...)
    samples (standardised: the prior is N(0, I))."""
    net: str = "mlp"
    """mlp, or unet (TinyUNet; images (N, C, H, W) with H and W even)."""
    width: int = 16
    """TinyUNet base width (a multiple of 8)."""
    reference: str = "vp"
    """vp (the official reference) or brownian."""
    sigma: float = 0.5
    """Brownian reference noise."""
    beta_max: float = 4.0
    """VP reference: beta_max (the official 4 keeps X_1 dependent on X_0)."""
    rounds: int = 4
    adjoint_steps: int = 600
    corrector_steps: int = 600
    bridge_steps: int = 2000
    sim_steps: int = 30
    """Euler-Maruyama steps of the forward SDE."""
    check_size: int = 51200
    """Trajectories the stopping rule checks after every round (0: no check)."""
    stop_at_prior_match: bool = True
    """Stop stage 1 at the first round whose terminal law passes the official stopping rule
    (``--rounds`` is then a maximum)."""
    seed: int = 0


def _data(name: str, n: int, seed: int, device) -> torch.Tensor:
    if name == "digits":
        return digits(device)[0]
    if name == "faces":
        return faces(device)
    if name in TOYS:
        return TOYS[name](n, seed=seed, device=device)
    if name.endswith(".npy"):
        return load_array(name, device)
    raise ValueError(
        f"data must be one of {[*TOYS, 'digits', 'faces']} or a .npy file, got {name!r}"
    )


def run_train(cfg: TrainConfig) -> None:
    device = resolve_device(cfg.device)
    data = _data(cfg.data, 8000, cfg.seed, device)
    if cfg.reference not in ("brownian", "vp"):
        raise ValueError(f"reference must be 'brownian' or 'vp', got {cfg.reference!r}")
    sde = BrownianSDE(cfg.sigma) if cfg.reference == "brownian" else VPSDE(0.1, cfg.beta_max)
    torch.manual_seed(cfg.seed)
    shape = tuple(data.shape[1:])
    if cfg.net == "unet":
        if len(shape) != 3 or shape[1] % 2 or shape[2] % 2 or cfg.width < 8 or cfg.width % 8:
            raise ValueError(
                f"--net unet needs images (N, C, H, W) with H, W even and a width that is a "
                f"multiple of 8; got samples of shape {shape}, width {cfg.width}"
            )
        c = shape[0]
        nets = {"u_net": TinyUNet(c, cfg.width), "h_net": TinyUNet(c, cfg.width),
                "bridge_net": TinyUNet(c, cfg.width),
                "generator": TinyUNet(c, cfg.width)}  # fmt: skip
    elif cfg.net == "mlp":
        nets = {}
    else:
        raise ValueError(f"net must be 'mlp' or 'unet', got {cfg.net!r}")
    hidden = 512 if data.dim() > 2 else 256
    model = ASBM(
        shape, sde, GaussianEnergy(1.0), sim_steps=cfg.sim_steps, hidden=hidden, **nets
    ).to(device)
    stop = cfg.stop_at_prior_match and cfg.check_size > 0
    model.fit_forward(data, cfg.rounds, cfg.adjoint_steps, cfg.corrector_steps, seed=cfg.seed,
                      check_size=cfg.check_size, stop_at_prior_match=stop)  # fmt: skip
    rounds = len(model.log.rounds) or cfg.rounds
    matched = model.log.matched_round
    print(f"stage 1: {rounds} round(s); terminal law "
          + (f"matched the prior after round {matched}" if matched else
             "did not pass the stopping rule" if cfg.check_size else "not checked"))  # fmt: skip
    model.fit_backward(data, cfg.bridge_steps, seed=cfg.seed)
    model.save_pretrained(cfg.out)
    x = model.sample(min(len(data), 1000), 4)
    print(
        f"saved {cfg.out}; 4-step MMD to the training data on {model.device}: "
        f"{mmd(x, data[: len(x)]):.4f}"
    )


@dataclass(frozen=True)
class EvaluateConfig(DeviceOption):
    """Sample from a saved checkpoint and measure it against a bundled data set."""

    checkpoint: Path = Path("runs/asbm/model")
    """Directory written by `icml26-asbm train` (or ASBM.save_pretrained)."""
    data: str = "moons"
    """moons, 8gaussians, checkerboard, digits, or a .npy file of (N, ...) samples."""
    steps: tuple[int, ...] = (1, 4, 32)
    n: int = 1000
    seed: int = 0


def run_evaluate(cfg: EvaluateConfig) -> dict:
    device = resolve_device(cfg.device)
    model = ASBM.from_pretrained(cfg.checkpoint, device=device)
    data = _data(cfg.data, cfg.n, cfg.seed + 1, device)
    if tuple(data.shape[1:]) != model.shape:
        raise ValueError(
            f"checkpoint samples have shape {model.shape}, data {cfg.data} has "
            f"{tuple(data.shape[1:])}"
        )
    g = torch.Generator().manual_seed(cfg.seed)
    ref = data[: cfg.n]
    out = {}
    for s in cfg.steps:
        x = model.sample(len(ref), s, generator=g)
        out[s] = {"mmd": mmd(x, ref), "sw2": sliced_w2(x, ref)}
        print(f"steps {s:>3}: MMD {out[s]['mmd']:.4f}  sliced W2 {out[s]['sw2']:.4f}")
    return out
