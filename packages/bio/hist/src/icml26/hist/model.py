"""HiST: Hierarchical Sparse Transformer for spatial transcriptomics from H&E (arXiv 2606.14251).

Implemented from public descriptions of the paper (its abstract) and a reading of the authors'
MIT code (wwyi1828/HiST; read, not copied):

* one token per measured spot at its integer lattice site (:mod:`icml26.hist.lattice`), plus two
  zero-feature corner sentinels that are dropped before the head;
* a dyadic U-Net on the active sites only, "111-21" by default: encoder 3 resolutions x 1 layer,
  decoder 2 resolutions of depth 2 and 1; skip connections by concatenation;
* every layer: local attention over regular ∪ shifted 6x6 windows with a relative position bias,
  plus attention with 3 slide calibration tokens (initialised from the max-pool, the mean-pool and
  a fixed N(0, 1e-4) vector of the embedded spot features) through a separate Q/K/V set, the two
  outputs summed (:mod:`icml26.hist.attention`);
* sparse 2x2 stride-2 convolution down, pixel shuffle up (:mod:`icml26.hist.sampling`);
* a linear head to G genes predicting log1p expression, its bias set to the training mean.

Adapted: widths are one ``dim`` at every stage (the authors' code can change width per stage);
the tokens' per-stage projections are plain Linear + LayerNorm.
"""

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from icml26.hist.attention import (
    RelativePositionBias,
    local_attention_edges,
    plan_windows,
    token_attention,
    window_attention_packed,
)
from icml26.hist.io import atomic_save_safetensors, atomic_write_json
from icml26.hist.lattice import add_sentinels, unique_sites
from icml26.hist.sampling import PixelShuffleUp, SparseDown, coarsen

ARCHITECTURES: dict[str, type["SpotModel"]] = {}


def register(cls):
    ARCHITECTURES[cls.__name__] = cls
    return cls


class SpotModel(nn.Module):
    """Base of every model in the harness: ``forward(features (N, F), coords (N, 2)) -> (N, G)``
    log1p expression. Holds the input standardisation (set from the training slides) and
    ``save_pretrained`` / ``from_pretrained`` (safetensors + config.json)."""

    config_class: ClassVar[type]

    def __init__(self, config):
        super().__init__()
        wanted = getattr(type(self), "config_class", None)
        if wanted is None:
            raise TypeError(
                f"{type(self).__name__} is a base class without a config_class: build one of "
                f"{sorted(ARCHITECTURES)} (or subclass SpotModel and set config_class)"
            )
        if not isinstance(config, wanted):
            raise TypeError(
                f"{type(self).__name__} takes a {wanted.__name__}, got {type(config).__name__}"
            )
        self.config = config
        self.genes: list[str] = []
        """Names of the G output genes (set by ``train`` from the slides; saved with the model)."""
        self.target_sum: float | None = None
        """The outputs are log1p of counts normalised to this library size (None: of raw
        counts); set by ``train``, saved with the model."""
        self.register_buffer("input_mean", torch.zeros(config.in_features))
        self.register_buffer("input_std", torch.ones(config.in_features))

    # -- inputs
    def check_inputs(self, features: torch.Tensor, coords: torch.Tensor):
        if not isinstance(features, torch.Tensor) or not isinstance(coords, torch.Tensor):
            raise TypeError("features and coords must be torch tensors")
        if features.ndim != 2 or features.shape[1] != self.config.in_features:
            raise ValueError(
                f"features must have shape (N, {self.config.in_features}), "
                f"got {tuple(features.shape)}"
            )
        if not features.is_floating_point():
            raise TypeError(f"features must be floating point, got {features.dtype}")
        if coords.shape != (len(features), 2):
            raise ValueError(
                f"coords must have shape ({len(features)}, 2) to match features, "
                f"got {tuple(coords.shape)}"
            )
        if coords.is_floating_point() or coords.dtype == torch.bool:
            raise TypeError(f"coords must be integer lattice sites, got {coords.dtype}")
        if len(features) == 0:
            raise ValueError("a slide needs at least one spot")
        if not torch.isfinite(features).all():
            raise ValueError("features contain NaN or inf")
        if (coords < 0).any():
            raise ValueError("coords must be non-negative lattice sites (see to_lattice)")
        if len(unique_sites(coords)[0]) != len(coords):
            raise ValueError("two spots share a lattice site; resolve them with to_lattice")
        return features, coords.long()

    def normalize(self, features: torch.Tensor) -> torch.Tensor:
        return (features - self.input_mean) / self.input_std

    @torch.no_grad()
    def set_statistics(self, feature_mean, feature_std, target_mean) -> None:
        """Input standardisation from the training slides; head bias = training mean log1p."""
        self.input_mean.copy_(torch.as_tensor(feature_mean))
        self.input_std.copy_(torch.as_tensor(feature_std).clamp_min(1e-6))
        self.head.bias.copy_(torch.as_tensor(target_mean))

    # -- weights as data
    def save_pretrained(self, path: str | os.PathLike) -> Path:
        """Write ``config.json`` and ``model.safetensors`` to the folder ``path``."""
        path = Path(path)
        atomic_save_safetensors(path / "model.safetensors", self.state_dict())
        atomic_write_json(
            path / "config.json",
            {
                "architecture": type(self).__name__,
                "config": asdict(self.config),
                "genes": list(self.genes),
                "target_sum": self.target_sum,
            },
        )
        return path

    @classmethod
    def from_pretrained(
        cls, path: str | os.PathLike, device: str | torch.device = "cpu"
    ) -> "SpotModel":
        """Load a model saved by :meth:`save_pretrained` (any registered architecture) onto
        ``device``."""
        from safetensors.torch import load_file

        path = Path(path)
        cfg_file, weights = path / "config.json", path / "model.safetensors"
        for f in (cfg_file, weights):
            if not f.is_file():
                raise ValueError(f"{f} not found: not a folder written by save_pretrained")
        try:
            meta = json.loads(cfg_file.read_text())
            arch = ARCHITECTURES[meta["architecture"]]
            names = {f.name for f in fields(arch.config_class)}
            config = arch.config_class(**{k: v for k, v in meta["config"].items() if k in names})
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            raise ValueError(f"{cfg_file} is not a valid model config: {e}") from None
        if cls is not SpotModel and not issubclass(arch, cls):
            raise ValueError(f"{path} holds a {arch.__name__}, not a {cls.__name__}")
        model = arch(config)
        genes = [str(g) for g in meta.get("genes") or []]
        if genes and len(genes) != config.num_genes:
            raise ValueError(f"{cfg_file}: {len(genes)} gene names for {config.num_genes} outputs")
        model.genes, model.target_sum = genes, meta.get("target_sum")
        try:
            model.load_state_dict(load_file(weights))
        except RuntimeError as e:
            raise ValueError(f"{weights} does not match its config: {e}") from None
        return model.to(device)


def check_sizes(cfg, ints: tuple[str, ...]) -> None:
    """The shared checks of the model configs: ``ints`` are positive ints, ``heads`` divides
    ``dim``, ``ff_ratio`` > 0 and 0 <= ``dropout`` < 1; a named ValueError otherwise."""
    for name in ints:
        v = getattr(cfg, name)
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if cfg.heads is not None and (
        isinstance(cfg.heads, bool) or not isinstance(cfg.heads, int) or cfg.heads < 1
    ):
        raise ValueError(f"heads must be a positive int or None, got {cfg.heads!r}")
    if cfg.dim % cfg.num_heads:
        raise ValueError(f"dim {cfg.dim} must be divisible by heads {cfg.num_heads}")
    if not cfg.ff_ratio > 0:
        raise ValueError(f"ff_ratio must be > 0, got {cfg.ff_ratio!r}")
    if not 0 <= cfg.dropout < 1:
        raise ValueError(f"dropout must lie in [0, 1), got {cfg.dropout!r}")


@dataclass(frozen=True)
class HiSTConfig:
    """HiST hyperparameters; the defaults are the paper's "111-21" model."""

    in_features: int
    """Image-feature dimension per spot."""
    num_genes: int
    """Number of genes G predicted per spot."""
    dim: int = 512
    """Width of every stage."""
    heads: int | None = None
    """Attention heads; None = dim // 64 (at least 1)."""
    stages: str = "111-21"
    """Encoder depths per resolution, '-', decoder depths from coarse to fine."""
    window: int = 6
    """Side of the square attention windows (the authors' window_size 3 is half of it)."""
    ff_ratio: float = 4.0
    """FFN hidden width / dim."""
    dropout: float = 0.05
    """Dropout on the input projection and on attention probabilities."""
    use_tokens: bool = True
    """Slide calibration tokens (False: the no-token ablation)."""
    sentinels: bool = True
    """Corner sentinel sites that anchor the dyadic grid."""
    downsample: str = "conv"
    """'conv' (2x2 stride-2 sparse convolution) or 'merge' (patch merge)."""
    local_attention: str = "window"
    """'window' (padded fast path) or 'edges' (the edge-list definition; slower)."""

    def __post_init__(self):
        check_sizes(self, ("in_features", "num_genes", "dim", "window"))
        enc, dash, dec = str(self.stages).partition("-")
        if not (dash and enc.isdigit() and (dec.isdigit() or not dec)) or len(dec) != len(enc) - 1:
            raise ValueError(
                f"stages {self.stages!r}: need k encoder depths and k-1 decoder depths, each "
                "one digit >= 1, e.g. '111-21'"
            )
        if "0" in enc + dec:
            raise ValueError(f"stages {self.stages!r}: every depth must be >= 1")
        if self.window < 2:
            raise ValueError(f"window must be >= 2, got {self.window}")
        if self.downsample not in ("conv", "merge"):
            raise ValueError(f"downsample must be 'conv' or 'merge', got {self.downsample!r}")
        if self.local_attention not in ("window", "edges"):
            raise ValueError(
                f"local_attention must be 'window' or 'edges', got {self.local_attention!r}"
            )

    @property
    def num_heads(self) -> int:
        return self.heads if self.heads is not None else max(1, self.dim // 64)

    @property
    def depths(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        enc, _, dec = self.stages.partition("-")
        return tuple(map(int, enc)), tuple(map(int, dec))


class HybridBlock(nn.Module):
    """One HiST layer: (window attention + token attention) -> out proj, then FFN; pre-norm."""

    def __init__(self, cfg: HiSTConfig):
        super().__init__()
        dim, self.heads = cfg.dim, cfg.num_heads
        self.edges = cfg.local_attention == "edges"
        self.attn_drop = cfg.dropout
        self.norm1 = nn.LayerNorm(dim)
        self.qkv_local = nn.Linear(dim, 3 * dim)
        self.rpb = RelativePositionBias(self.heads, cfg.window)
        self.qkv_global = nn.Linear(dim, 3 * dim) if cfg.use_tokens else None
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * cfg.ff_ratio)
        self.ffn = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def _split(self, proj, h):
        return proj(h).view(len(h), 3, self.heads, -1)  # (N, 3, H, d): q, k, v

    def forward(self, x, tokens, plan, coords):
        """x (N, C) sites, tokens (T, C) or None, plan/coords of this stage."""
        h = self.norm1(x)
        qkv = self._split(self.qkv_local, h)
        drop = self.attn_drop if self.training else 0.0
        if self.edges:
            a = local_attention_edges(
                *qkv.unbind(1), coords, plan.real, plan.window, self.rpb, drop, self.training
            )
        else:
            a = window_attention_packed(qkv, plan, self.rpb, drop, self.training)
        if tokens is not None:
            qs, ks, vs = self._split(self.qkv_global, h).unbind(1)
            qt, kt, vt = self._split(self.qkv_global, self.norm1(tokens)).unbind(1)
            gs, gt = token_attention(qs, ks, vs, qt, kt, vt, plan.real, drop, self.training)
            a = a + gs
            tokens = tokens + self.out(gt.flatten(1))
            tokens = tokens + self.ffn(self.norm2(tokens))
        x = x + self.out(a.flatten(1))
        x = x + self.ffn(self.norm2(x))
        return x, tokens


@register
class HiST(SpotModel):
    """The HiST model. ``forward(features (N, F), coords (N, 2) int) -> (N, G)`` log1p expression.

    ``coords`` are integer lattice sites (:func:`icml26.hist.to_lattice`), one per spot. The
    output does not depend on the order the spots are given in (up to float rounding).
    """

    config_class = HiSTConfig

    def __init__(self, config: HiSTConfig):
        super().__init__(config)
        enc, dec = config.depths  # HiSTConfig checked them when it was built
        dim = config.dim
        self.levels = len(enc)
        self.embed = nn.Sequential(nn.Linear(config.in_features, dim), nn.Dropout(config.dropout))
        self.register_buffer("fixed_token", torch.randn(dim) * 1e-4)
        blocks = lambda n: nn.ModuleList(HybridBlock(config) for _ in range(n))  # noqa: E731
        self.encoder = nn.ModuleList(blocks(n) for n in enc)
        self.down = nn.ModuleList(
            SparseDown(dim, dim, config.downsample, config.use_tokens) for _ in dec
        )
        self.up = nn.ModuleList(PixelShuffleUp(dim, dim, config.use_tokens) for _ in dec)
        self.fuse = nn.ModuleList(nn.Linear(2 * dim, dim) for _ in dec)
        self.fuse_tokens = nn.ModuleList(
            nn.Linear(2 * dim, dim) for _ in (dec if config.use_tokens else ())
        )
        self.decoder = nn.ModuleList(blocks(n) for n in dec)
        self.out_norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, config.num_genes)

    def sites(self, x: torch.Tensor, coords: torch.Tensor):
        """Active sites of the finest stage: (x, coords, real, index of the spots' rows)."""
        n = len(x)
        if not self.config.sentinels:
            return x, coords, torch.ones(n, dtype=torch.bool, device=x.device), slice(0, n)
        coords, sentinel = add_sentinels(coords, self.levels)
        x = torch.cat([x, x.new_zeros(2, x.shape[1])])  # zero-feature sentinels
        return x, coords, ~sentinel, slice(0, n)

    def forward(self, features: torch.Tensor, coords: torch.Tensor) -> torch.Tensor:
        features, coords = self.check_inputs(features, coords)
        spots = self.embed(self.normalize(features))  # (N, C)
        x, coords, real, keep = self.sites(spots, coords)
        tokens = None
        if self.config.use_tokens:  # slide calibration tokens: max-pool, mean-pool, fixed
            tokens = torch.stack([spots.amax(0), spots.mean(0), self.fixed_token])
        pyramid, children = [(coords, real)], []
        for _ in range(self.levels - 1):
            c, r, ch = coarsen(*pyramid[-1])
            pyramid.append((c, r))
            children.append(ch)
        plans = [plan_windows(c, r, self.config.window) for c, r in pyramid]
        skips = []
        for lvl, stage in enumerate(self.encoder):
            for blk in stage:
                x, tokens = blk(x, tokens, plans[lvl], pyramid[lvl][0])
            if lvl < self.levels - 1:
                skips.append((x, tokens))
                x, tokens = self.down[lvl](x, tokens, children[lvl])
        for j, stage in enumerate(self.decoder):
            lvl = self.levels - 2 - j
            x, tokens = self.up[j](x, tokens, children[lvl])
            x = self.fuse[j](torch.cat([x, skips[lvl][0]], -1))
            if tokens is not None:
                tokens = self.fuse_tokens[j](torch.cat([tokens, skips[lvl][1]], -1))
            for blk in stage:
                x, tokens = blk(x, tokens, plans[lvl], pyramid[lvl][0])
        return self.head(self.out_norm(x[keep]))


@register
class DenseGridHiST(HiST):
    """The same network on the dense canvas: every lattice cell of the slide's bounding box is a
    site (zero features where there is no spot). The cost baseline: it grows with the area."""

    def sites(self, x: torch.Tensor, coords: torch.Tensor):
        m = 2 ** (self.levels - 1)
        shape = ((coords.max(0).values + m) // m) * m  # rows, cols rounded up to the dyadic grid
        rr, cc = torch.meshgrid(
            torch.arange(int(shape[0]), device=coords.device),
            torch.arange(int(shape[1]), device=coords.device),
            indexing="ij",
        )
        grid = torch.stack([rr.flatten(), cc.flatten()], 1)
        keep = coords[:, 0] * int(shape[1]) + coords[:, 1]
        canvas = x.new_zeros(len(grid), x.shape[1])
        canvas[keep] = x
        real = torch.ones(len(grid), dtype=torch.bool, device=x.device)
        return canvas, grid, real, keep
