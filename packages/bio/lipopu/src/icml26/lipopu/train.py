"""The training loop: the same sampler, optimiser, budget and model selection for every objective.

Each step draws ``batch_p`` labeled positives and ``batch_u`` pockets of the unlabeled sample (the
whole training set: the case-control construction of ``losses``), perturbs their residue bags
(the pocket-definition augmentation) and takes one AdamW step on the chosen objective. After each
epoch the model is scored on the validation pockets with their *observed* PU labels (PU-AUROC: a
labeled positive vs everything else; under SCAR it is an affine map of the true AUROC, so model
selection never sees a hidden label) and the best epoch's weights are kept; training stops after
``patience`` epochs without improvement.

Runs unchanged under ``torchrun``: with a process group the model is wrapped in
DistributedDataParallel and each rank draws its own batches. Checkpoints (``checkpoint_dir``) are
safetensors plus JSON, written atomically after every epoch; ``resume=True`` continues.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from safetensors.torch import load_file, save_file
from sklearn.metrics import roc_auc_score
from torch import nn
from tqdm.auto import tqdm

from icml26.lipopu.data import check_composition, composition_bags
from icml26.lipopu.losses import RISKS, check_prior, multilabel_objective
from icml26.lipopu.model import PAD, PocketAttentionMIL
from icml26.testing.files import atomic_write


@dataclass(frozen=True)
class TrainConfig:
    """One training run; every objective compared gets the same one."""

    objective: str = "lipopu"
    """bce (unlabeled as negative), nnpu, pu_auc or lipopu."""
    surrogate: str | None = None
    """The PU risks' loss l: sigmoid or logistic (None: nnPU and PU-AUC sigmoid as in their
    papers, LipoPU logistic)."""
    epochs: int = 30
    """Most epochs (one epoch = one pass over the unlabeled sample)."""
    batch_p: int = 64
    """Labeled positives per step."""
    batch_u: int = 256
    """Unlabeled pockets per step."""
    lr: float = 2e-3
    weight_decay: float = 1e-4
    patience: int = 6
    """Epochs without a better validation PU-AUROC before stopping."""
    beta: float = 0.0
    """Threshold of the non-negative correction (nnPU, LipoPU); inf switches it off."""
    seed: int = 0
    progress: bool = False

    def __post_init__(self):
        if self.objective not in RISKS:
            raise ValueError(f"objective must be one of {RISKS}, got {self.objective!r}")
        for name in ("epochs", "batch_p", "batch_u", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.surrogate not in (None, "sigmoid", "logistic"):
            raise ValueError(f"surrogate must be sigmoid, logistic or None, got {self.surrogate!r}")
        if self.batch_p < 2:
            raise ValueError("batch_p must be >= 2 (the ranking risk pairs positives)")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not self.beta >= 0:
            raise ValueError(f"beta must be >= 0 (inf: no correction), got {self.beta}")


class CompositionBags:
    """Residue-type bags of composition-only pockets (SLiPP's amino-acid counts), perturbed in
    training by residue subsampling. ``bags(index, rng)`` -> (n, L) long types, ``PAD`` after."""

    def __init__(self, composition: np.ndarray, keep_min: float = 0.6):
        if not 0 < keep_min <= 1:
            raise ValueError(f"keep_min must lie in (0, 1] (1: no subsampling), got {keep_min!r}")
        self.composition = check_composition(composition)
        self.keep_min = keep_min

    def __len__(self) -> int:
        return len(self.composition)

    def __call__(self, index: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        if rng is None or self.keep_min >= 1:
            return composition_bags(self.composition[index])
        keep = rng.uniform(self.keep_min, 1.0, size=len(index))
        return composition_bags(self.composition[index], keep, rng)


class StructureBags:
    """Residue bags of pockets from structures, perturbed in training by the pocket definition.

    ``variants[r]`` holds every pocket's bag at one definition (e.g. the residues within 4, 6
    and 8 angstrom of its alpha spheres, from ``residue_bag``), each an (L_i,) array of residue
    types; ``features[r]`` (optional) the matching (L_i, D) per-residue features. In training
    (``rng`` given) each pocket gets a definition drawn at random; in evaluation, ``default``.
    Returns (n, L) types (``PAD`` after), or (types, (n, L, D) features) with features.
    """

    def __init__(self, variants, features=None, default: int = 0):
        if not variants or len({len(v) for v in variants}) != 1:
            raise ValueError("variants must be a non-empty list of equally long lists of bags")
        if features is not None and [len(f) for f in features] != [len(v) for v in variants]:
            raise ValueError("features must match variants, one (L_i, D) array per bag")
        if not 0 <= default < len(variants):
            raise ValueError(f"default must index variants (0..{len(variants) - 1})")
        self.variants, self.features, self.default = variants, features, default

    def __len__(self) -> int:
        return len(self.variants[0])

    def __call__(self, index: np.ndarray, rng: np.random.Generator | None = None):
        index = np.asarray(index)
        pick = (
            rng.integers(len(self.variants), size=len(index))
            if rng is not None
            else np.full(len(index), self.default)
        )
        bags = [self.variants[r][i] for r, i in zip(pick, index, strict=True)]
        length = max(1, *(len(b) for b in bags))
        types = np.full((len(index), length), PAD, dtype=np.int64)
        for row, b in enumerate(bags):
            types[row, : len(b)] = b
        if self.features is None:
            return types
        dim = self.features[0][0].shape[-1]
        feats = np.zeros((len(index), length, dim), dtype=np.float32)
        for row, (r, i) in enumerate(zip(pick, index, strict=True)):
            feats[row, : len(self.features[r][i])] = self.features[r][i]
        return types, feats


def _split_bags(out) -> tuple[np.ndarray, np.ndarray | None]:
    """A bag source returns residue types, or (types, per-residue features)."""
    return out if isinstance(out, tuple) else (out, None)


@dataclass
class FitResult:
    """``history``: per epoch {epoch, val_pu_auroc, loss, corrected_share (nnPU, LipoPU: the
    share of steps the non-negative correction took)}; ``best_epoch`` and its score."""

    history: list[dict]
    best_epoch: int
    best_val: float


def predict_scores(
    model: nn.Module,
    descriptors: np.ndarray,
    bags: Callable[[np.ndarray], np.ndarray],
    index: np.ndarray | None = None,
    batch: int = 4096,
) -> np.ndarray:
    """Logits (n, K) of the pockets ``index`` (all by default), in eval mode, no perturbation."""
    module = model.module if hasattr(model, "module") else model
    device = next(module.parameters()).device
    index = np.arange(len(descriptors)) if index is None else np.asarray(index)
    out = []
    was_training = module.training
    module.eval()
    with torch.no_grad():
        for start in range(0, len(index), batch):
            rows = index[start : start + batch]
            types, feats = _split_bags(bags(rows))
            res = torch.as_tensor(types, device=device)
            desc = torch.as_tensor(descriptors[rows], dtype=torch.float32, device=device)
            feats = None if feats is None else torch.as_tensor(feats, device=device)
            out.append(module(res, desc, feats).logits.float().cpu().numpy())
    module.train(was_training)
    return np.concatenate(out) if out else np.zeros((0, module.config.n_outputs), np.float32)


def pu_auroc(scores: np.ndarray, observed: np.ndarray) -> float:
    """Mean over categories of the AUROC of labeled positives against all other pockets."""
    scores, observed = np.atleast_2d(scores.T).T, np.atleast_2d(observed.T).T
    values = [
        roc_auc_score(observed[:, k], scores[:, k])
        for k in range(observed.shape[1])
        if 0 < observed[:, k].sum() < len(observed)
    ]
    return float(np.mean(values)) if values else float("nan")


def _rank() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _save(directory: Path, model, best_state, opt, meta: dict) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    module = model.module if hasattr(model, "module") else model
    module.save_pretrained(directory)
    tensors = {f"best.{k}": v.contiguous() for k, v in best_state.items()}
    for i, per_param in opt.state_dict()["state"].items():
        for key, value in per_param.items():
            tensors[f"opt.{i}.{key}"] = torch.as_tensor(value).detach().clone().cpu()
    atomic_write(directory / "training.safetensors", lambda p: save_file(tensors, p))
    text = json.dumps(meta)
    atomic_write(directory / "training.json", lambda p: Path(p).write_text(text))


def _save_rng(directory: Path, rank: int, rng: np.random.Generator, device) -> None:
    """Each rank's batch sampler and torch generator (dropout), in a file of its own: under
    torchrun every rank draws its own batches, and a resume must give each its own stream back."""
    state = {"numpy": rng.bit_generator.state, "torch": torch.get_rng_state().tolist()}
    if device.type == "cuda":
        state["cuda"] = torch.cuda.get_rng_state(device).tolist()
    directory.mkdir(parents=True, exist_ok=True)
    text = json.dumps(state)
    atomic_write(directory / f"rng.rank{rank}.json", lambda p: Path(p).write_text(text))


def _load_rng(directory: Path, rank: int, rng: np.random.Generator, device) -> None:
    path = directory / f"rng.rank{rank}.json"
    if not path.is_file():
        raise ValueError(
            f"{directory}: no {path.name}: resume with the number of processes that saved it"
        )
    state = json.loads(path.read_text())
    rng.bit_generator.state = state["numpy"]
    torch.set_rng_state(torch.tensor(state["torch"], dtype=torch.uint8))
    if "cuda" in state and device.type == "cuda":
        torch.cuda.set_rng_state(torch.tensor(state["cuda"], dtype=torch.uint8), device)


def _load(directory: Path, model, opt) -> tuple[dict, dict]:
    module = model.module if hasattr(model, "module") else model
    module.load_state_dict(load_file(directory / "model.safetensors"))
    tensors = load_file(directory / "training.safetensors")
    best = {k.removeprefix("best."): v for k, v in tensors.items() if k.startswith("best.")}
    meta = json.loads((directory / "training.json").read_text())
    state = {"param_groups": meta["param_groups"], "state": {}}
    for key, value in tensors.items():
        if key.startswith("opt."):
            _, i, name = key.split(".", 2)
            state["state"].setdefault(int(i), {})[name] = value
    opt.load_state_dict(state)
    return best, meta


def fit(
    model: PocketAttentionMIL,
    descriptors: np.ndarray,
    bags: CompositionBags | Callable,
    observed: np.ndarray,
    train: np.ndarray,
    val: np.ndarray,
    config: TrainConfig,
    prior: float | list[float] | None = None,
    checkpoint_dir: str | Path | None = None,
    resume: bool = False,
) -> FitResult:
    """Train ``model`` on the training pockets ``train`` with the observed PU labels.

    ``descriptors``: (N, D) standardised; ``bags(index, rng)``: residue bags of pockets
    ``index`` (perturbed when ``rng`` is given); ``observed``: (N,) or (N, K) 0/1 labels (1 =
    labeled positive); ``prior``: P(y = 1) of each category among the training pockets (needed by
    nnpu and lipopu). The model ends holding the best validation epoch's weights.
    """
    obs2, priors, positives = _check_fit_inputs(
        model, descriptors, observed, train, val, config, prior
    )
    rank, world = _rank()
    device = next(model.parameters()).device
    torch.manual_seed(config.seed)
    rng = np.random.default_rng([config.seed, rank])
    net: nn.Module = model
    if world > 1:
        net = nn.parallel.DistributedDataParallel(
            model,
            device_ids=[device.index] if device.type == "cuda" else None,
            # mean pooling leaves the gated-attention weights out of the graph
            find_unused_parameters=model.config.use_bag and model.config.pooling == "mean",
        )
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    history: list[dict] = []
    best_state = {k: v.detach().clone().cpu() for k, v in model.state_dict().items()}
    best_val, best_epoch, start = -np.inf, 0, 0
    directory = Path(checkpoint_dir) if checkpoint_dir else None
    if resume and directory and (directory / "training.json").is_file():
        best_state, meta = _load(directory, model, opt)
        history, best_val, best_epoch, start = (
            meta["history"], meta["best_val"], meta["best_epoch"], meta["epoch"],
        )  # fmt: skip
        _load_rng(directory, rank, rng, device)
    batches = _PUBatches(descriptors, bags, obs2, np.asarray(train), positives, config, rng, device)
    bar = tqdm(
        range(start, config.epochs),
        desc=config.objective,
        disable=not config.progress or rank != 0,
    )
    for epoch in bar:
        if epoch - best_epoch >= config.patience and history:
            break
        steps = max(1, len(batches.train) // (config.batch_u * world))
        entry = _train_epoch(net, model, opt, batches, priors, config, steps)
        scores = predict_scores(model, descriptors, bags, val)
        score = pu_auroc(scores, obs2[val])
        history.append({"epoch": epoch + 1, "val_pu_auroc": score, **entry})
        if score > best_val:
            best_val, best_epoch = score, epoch + 1
            best_state = {k: v.detach().clone().cpu() for k, v in model.state_dict().items()}
        bar.set_postfix(val=f"{score:.3f}", best=f"{best_val:.3f}")
        if directory:
            _save_rng(directory, rank, rng, device)
        if directory and rank == 0:
            meta = {
                "epoch": epoch + 1, "history": history, "best_val": best_val,
                "best_epoch": best_epoch, "world_size": world,
                "param_groups": opt.state_dict()["param_groups"], "config": asdict(config),
            }  # fmt: skip
            _save(directory, model, best_state, opt, meta)
    model.load_state_dict(best_state)
    return FitResult(history, best_epoch, float(best_val))


def _check_fit_inputs(model, descriptors, observed, train, val, config, prior):
    """The labels as (N, K), each category's prior and its labeled training positives; a
    ValueError names what ``fit`` cannot train or select a model from."""
    observed = np.asarray(observed)
    obs2 = observed if observed.ndim == 2 else observed[:, None]
    n_out = model.config.n_outputs
    if obs2.shape != (len(descriptors), n_out):
        raise ValueError(
            f"observed must be ({len(descriptors)},) or ({len(descriptors)}, {n_out}) for this "
            f"model, got {observed.shape}"
        )
    if config.objective in ("nnpu", "lipopu"):
        if prior is None:
            raise ValueError(f"objective {config.objective!r} needs the class prior")
        priors = [check_prior(p, "prior") for p in np.atleast_1d(prior)]
        if len(priors) != n_out:
            raise ValueError(f"prior needs {n_out} value(s), got {len(priors)}")
    else:
        priors = [0.5] * n_out  # unused by bce and pu_auc
    train, val = np.asarray(train), np.asarray(val)
    positives = [train[obs2[train, k] == 1] for k in range(n_out)]
    if any(len(p) < 2 for p in positives):
        raise ValueError(
            f"every category needs >= 2 labeled positives in the training pockets, got "
            f"{[len(p) for p in positives]}"
        )
    missing = [k for k in range(n_out) if obs2[val, k].sum() == 0]
    if missing:
        raise ValueError(
            f"the validation pockets hold no labeled positive of output(s) {missing}: model "
            "selection by validation PU-AUROC needs some (a larger validation split or c)"
        )
    return obs2, priors, positives


@dataclass
class _PUBatches:
    """Draws a step's batch: a P sample per category (every category needs positives in its
    batch) and a U sample shared by all, with their residue bags."""

    descriptors: np.ndarray
    bags: object
    obs2: np.ndarray
    train: np.ndarray
    positives: list
    config: TrainConfig
    rng: np.random.Generator
    device: torch.device

    def __post_init__(self):
        self.obs_t = torch.as_tensor(self.obs2, dtype=torch.float32)
        self.desc_t = torch.as_tensor(self.descriptors, dtype=torch.float32)

    def draw(self):
        cfg, rng = self.config, self.rng
        rows_p = np.concatenate([rng.choice(p, cfg.batch_p) for p in self.positives])
        rows_u = rng.choice(self.train, cfg.batch_u)
        rows = np.concatenate([rows_p, rows_u])
        types, feats = _split_bags(self.bags(rows, rng))
        res = torch.as_tensor(types, device=self.device)
        feats = None if feats is None else torch.as_tensor(feats, device=self.device)
        desc = self.desc_t[rows].to(self.device)
        return res, desc, feats, self.obs_t[rows].to(self.device), len(rows_p)


def _train_epoch(net, model, opt, batches: _PUBatches, priors, config, steps: int) -> dict:
    """One epoch of ``steps`` PU steps; the mean loss and how often the non-negative
    correction stepped (nnPU, LipoPU)."""
    net.train()
    total, fired = 0.0, []  # fired: the correction's flags, one per category and step
    for _ in range(steps):
        res, desc, feats, obs, n_p = batches.draw()
        logits = net(res, desc, feats).logits  # (n_p + n_u, K)
        # each category's positives come from its own share of the P sample; U is shared
        loss = multilabel_objective(
            config.objective, logits[:n_p], obs[:n_p], logits[n_p:], obs[n_p:], priors,
            loss=config.surrogate, beta=config.beta, stats=fired, validate=False,
        )  # fmt: skip
        opt.zero_grad(set_to_none=True)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
        total += float(loss.detach())
    entry = {"loss": total / steps}
    if fired:
        entry["corrected_share"] = float(torch.stack(fired).float().mean())
    return entry
