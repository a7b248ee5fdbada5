"""The pocket model: gated attention-MIL over a pocket's residues plus its fpocket descriptors.

Gated attention pooling is Ilse, Tomczak & Welling (ICML 2018), eq. 9:
``a_i = softmax_i(w^T [tanh(V h_i) * sigmoid(U h_i)])`` and ``z = sum_i a_i h_i``. A residue's
embedding ``h_i`` is a learned embedding of its amino-acid type, plus a projection of optional
per-residue features (ESM-2 or other embeddings, when a user has them). ``z`` is concatenated
with the pocket's standardised descriptors and a small MLP gives one logit per lipid category.
``a_i`` is the residue-level interpretation. A protein's score pools its pockets' scores (max or
log-sum-exp), as SLiPP ranks a protein by its best pocket.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors.torch import load_file, save_file
from torch import Tensor, nn

from icml26.testing.files import atomic_write

AMINO_ACIDS = (
    "ALA", "ARG", "ASN", "ASP", "CYS", "GLN", "GLU", "GLY", "HIS", "ILE",
    "LEU", "LYS", "MET", "PHE", "PRO", "SER", "THR", "TRP", "TYR", "VAL",
)  # fmt: skip
"""The 20 standard residues, in SLiPP's column order; any other residue is type 20 (unknown)."""
UNKNOWN_RESIDUE = len(AMINO_ACIDS)
PAD = -1
"""Residue type of a padding slot in a batch of bags."""


@dataclass(frozen=True)
class PocketModelConfig:
    """Sizes of a ``PocketAttentionMIL``."""

    n_descriptors: int = 17
    """Pocket descriptors per pocket (SLiPP's 17 fpocket descriptors by default)."""
    n_outputs: int = 1
    """Logits per pocket: 1 for lipid / not, K for K lipid categories."""
    dim: int = 32
    """Residue embedding width."""
    attention_dim: int = 32
    """Width of the gated attention's hidden layer (V and U)."""
    hidden: int = 64
    """Width of the scoring MLP."""
    residue_features: int = 0
    """Extra per-residue features (e.g. 320 for ESM-2 t6); 0 for residue types only."""
    use_bag: bool = True
    """False: descriptors only (the ablation without the residue bag)."""
    use_descriptors: bool = True
    """False: residue bag only."""
    pooling: str = "gated"
    """gated (attention-MIL) or mean (every residue weighs the same: the ablation)."""
    dropout: float = 0.1

    def __post_init__(self):
        for name in ("n_descriptors", "residue_features"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        for name in ("n_outputs", "dim", "attention_dim", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not (self.use_bag or self.use_descriptors):
            raise ValueError("use_bag and use_descriptors cannot both be False")
        if self.use_descriptors and self.n_descriptors == 0:
            raise ValueError("use_descriptors needs n_descriptors >= 1")
        if self.pooling not in ("gated", "mean"):
            raise ValueError(f"pooling must be 'gated' or 'mean', got {self.pooling!r}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")


class MILOutput(NamedTuple):
    """``logits``: (B, K) per pocket; ``attention``: (B, L) residue weights, 0 on padding
    (None when the model has no residue bag)."""

    logits: Tensor
    attention: Tensor | None


class GatedAttentionPool(nn.Module):
    """Ilse et al. 2018, eq. 9: masked gated attention over a bag. (B, L, D) -> (B, D), (B, L)."""

    def __init__(self, dim: int, attention_dim: int):
        super().__init__()
        self.V = nn.Linear(dim, attention_dim)
        self.U = nn.Linear(dim, attention_dim)
        self.w = nn.Linear(attention_dim, 1, bias=False)

    def forward(self, h: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        # h: (B, L, D); mask: (B, L) True on real residues
        e = self.w(torch.tanh(self.V(h)) * torch.sigmoid(self.U(h))).squeeze(-1)  # (B, L)
        e = e.masked_fill(~mask, float("-inf"))
        # an empty bag (no residue at all) pools to zero instead of NaN
        a = torch.softmax(e, dim=-1).nan_to_num(0.0)  # (B, L)
        z = torch.einsum("bl,bld->bd", a, h)  # (B, D)
        return z, a


class PocketAttentionMIL(nn.Module):
    """Score pockets from their residue bag and descriptors; see the module docstring.

    ``forward(residues, descriptors, residue_features=None)``:
    - ``residues``: (B, L) long residue types in [0, 20] (20 = non-standard), ``PAD`` (-1) on
      padding slots;
    - ``descriptors``: (B, n_descriptors) float, already standardised;
    - ``residue_features``: (B, L, residue_features) float or None.
    Returns ``MILOutput(logits (B, n_outputs), attention (B, L))``.
    """

    def __init__(self, config: PocketModelConfig | None = None):
        super().__init__()
        if config is not None and not isinstance(config, PocketModelConfig):
            raise TypeError(
                f"config must be a PocketModelConfig or None, got {type(config).__name__}"
            )
        self.config = config = config or PocketModelConfig()
        width = 0
        if config.use_bag:
            self.embed = nn.Embedding(len(AMINO_ACIDS) + 1, config.dim)
            self.feature_proj = (
                nn.Linear(config.residue_features, config.dim) if config.residue_features else None
            )
            self.pool = GatedAttentionPool(config.dim, config.attention_dim)
            width += config.dim
        if config.use_descriptors:
            width += config.n_descriptors
        self.head = nn.Sequential(
            nn.Linear(width, config.hidden),
            nn.GELU(),
            nn.Dropout(config.dropout),
            nn.Linear(config.hidden, config.hidden),
            nn.GELU(),
            nn.Linear(config.hidden, config.n_outputs),
        )

    def _check(self, residues: Tensor, descriptors: Tensor, residue_features: Tensor | None):
        cfg = self.config
        if descriptors.ndim != 2 or descriptors.shape[1] != cfg.n_descriptors:
            raise ValueError(
                f"descriptors must be (B, {cfg.n_descriptors}), got {tuple(descriptors.shape)}"
            )
        if not descriptors.is_floating_point():
            raise TypeError(f"descriptors must be a floating-point tensor, got {descriptors.dtype}")
        weight = next(self.parameters())
        if descriptors.dtype != weight.dtype and not torch.is_autocast_enabled(weight.device.type):
            raise TypeError(f"descriptors are {descriptors.dtype} but the model's weights are "
                            f"{weight.dtype}: cast one to the other (descriptors.to("
                            f"{weight.dtype}) or model.to({descriptors.dtype}))")  # fmt: skip
        if len(descriptors) == 0:
            raise ValueError("descriptors must hold at least one pocket (B >= 1), got 0 rows")
        if residues.ndim != 2 or residues.shape[0] != descriptors.shape[0]:
            raise ValueError(
                f"residues must be (B, L) with B = {descriptors.shape[0]}, "
                f"got {tuple(residues.shape)}"
            )
        if residues.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"residues must be an integer tensor, got {residues.dtype}")
        if residues.numel() and (
            bool((residues < PAD).any()) or bool((residues > len(AMINO_ACIDS)).any())
        ):
            raise ValueError(f"residues must be residue types in [0, {len(AMINO_ACIDS)}] or PAD "
                             f"({PAD}), got values in [{int(residues.min())}, "
                             f"{int(residues.max())}]")  # fmt: skip
        if not bool(torch.isfinite(descriptors).all()):
            raise ValueError("descriptors must be finite (a NaN descriptor gives a NaN score)")
        if cfg.residue_features and cfg.use_bag:
            want = (*residues.shape, cfg.residue_features)
            if residue_features is None or tuple(residue_features.shape) != want:
                got = None if residue_features is None else tuple(residue_features.shape)
                raise ValueError(f"residue_features must be {want}, got {got}")

    def forward(
        self, residues: Tensor, descriptors: Tensor, residue_features: Tensor | None = None
    ) -> MILOutput:
        self._check(residues, descriptors, residue_features)
        parts, attention = [], None
        if self.config.use_bag:
            mask = residues >= 0  # (B, L)
            h = self.embed(residues.clamp(min=0).long())  # (B, L, D)
            if self.feature_proj is not None:
                h = h + self.feature_proj(residue_features)
            if self.config.pooling == "gated":
                z, attention = self.pool(h, mask)  # (B, D), (B, L)
            else:  # uniform weights over the real residues
                attention = mask.float() / mask.sum(-1, keepdim=True).clamp(min=1)
                z = torch.einsum("bl,bld->bd", attention, h)
            parts.append(z)
        if self.config.use_descriptors:
            parts.append(descriptors)
        return MILOutput(self.head(torch.cat(parts, dim=-1)), attention)

    # --- weights as data -----------------------------------------------------------------------

    def save_pretrained(self, directory: str | os.PathLike, extra: dict | None = None) -> Path:
        """``model.safetensors`` and ``config.json`` (with ``extra``: e.g. the standardisation
        the descriptors need), each written atomically."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        atomic_write(directory / "model.safetensors", lambda p: save_file(tensors, p))
        meta = {"model": asdict(self.config), **(extra or {})}
        text = json.dumps(meta, indent=2)
        atomic_write(directory / "config.json", lambda p: Path(p).write_text(text))
        return directory

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike) -> PocketAttentionMIL:
        """Load what ``save_pretrained`` wrote (safetensors only, nothing unpickled)."""
        directory = Path(directory)
        for name in ("config.json", "model.safetensors"):
            if not (directory / name).is_file():
                raise ValueError(f"{directory}: no {name} (save with save_pretrained)")
        try:
            config = PocketModelConfig(
                **json.loads((directory / "config.json").read_text())["model"]
            )
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(
                f"{directory / 'config.json'}: not a PocketAttentionMIL config ({e})"
            ) from None
        model = cls(config)
        model.load_state_dict(load_file(directory / "model.safetensors"))
        return model


def protein_score(pocket_scores: Tensor, protein: Tensor, pool: str = "max") -> Tensor:
    """Pool pocket scores into one score per protein.

    ``pocket_scores``: (N,) logits; ``protein``: (N,) long protein index in [0, P);
    ``pool``: ``"max"`` (SLiPP's rule: a protein is as likely as its best pocket) or ``"lse"``
    (log-sum-exp, a smooth max). Returns (P,).
    """
    if pocket_scores.shape != protein.shape or pocket_scores.ndim != 1:
        raise ValueError("pocket_scores and protein must be 1-D tensors of the same length")
    if protein.dtype not in (torch.int64, torch.int32) or bool((protein < 0).any()):
        raise ValueError("protein must hold integer protein indices >= 0 (a long tensor)")
    n = int(protein.max()) + 1 if protein.numel() else 0
    if pool == "max":
        out = pocket_scores.new_full((n,), float("-inf"))
        return out.scatter_reduce(0, protein, pocket_scores, reduce="amax")
    if pool == "lse":
        top = protein_score(pocket_scores, protein, "max")
        shifted = torch.exp(pocket_scores - top[protein])
        return top + torch.log(pocket_scores.new_zeros(n).index_add(0, protein, shifted))
    raise ValueError(f"pool must be 'max' or 'lse', got {pool!r}")
