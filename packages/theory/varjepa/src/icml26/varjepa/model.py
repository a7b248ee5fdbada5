"""T-JEPA and Var-T-JEPA over per-feature tokens.

``TJEPA`` (Thimonier et al., ICLR 2025): a context encoder sees the context columns (plus
optional learned [REG] tokens), an EMA copy of it (the target encoder) sees the whole row, and a
predictor fed the context outputs and one mask token per target column (carrying that column's
position embedding) regresses the target encoder's layer-normed outputs at the target columns.
Without [REG] tokens nothing but the EMA and stop-gradient keeps it from collapsing.

``VarTJEPA`` (Var-JEPA, arXiv 2603.20111, tabular instance): the same three transformers made
probabilistic and trained by one ELBO (``elbo.py``), with no EMA, stop-gradient or [REG] tokens:
- q(z_C | x_C): the context encoder, a Gaussian per context column (mean, log-variance heads);
- q(z_T | x_T): the target encoder, run on the target columns alone, a Gaussian per column;
- p(z_T | z_C): the predictor, fed a sample of z_C and mask tokens, a Gaussian per target column;
- p(x_j | z_j): a decoder shared across columns with a per-column output head: Gaussian with a
  learned per-column variance for numerical columns (missing values skipped), a categorical
  distribution over the column's codes (its missing code included) for categorical ones.

Reconstructed (no code or paper body is public): the per-column latents, the shared decoder
trunk with per-column heads, which encoder gives the representation (``VarTJEPA.encode``: the
context posterior on the whole row, every column treated as context) and the widths.
"""

from __future__ import annotations

import copy
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

from icml26.testing.files import atomic_write
from icml26.varjepa.elbo import (
    ElboTerms,
    elbo_terms,
    gaussian_kl,
    gaussian_log_likelihood,
    reparameterize,
)
from icml26.varjepa.masks import ContextTargetMasks
from icml26.varjepa.tokenizer import EncodedRows, FeatureEmbedding

LOGVAR_RANGE = (-8.0, 8.0)  # keeps exp(logvar) finite in float32 early in training


@dataclass(frozen=True)
class ModelConfig:
    """Widths shared by T-JEPA and Var-T-JEPA so both get the same capacity."""

    dim: int = 32
    """Token width d of the encoders (and Var-T-JEPA's per-column latent width)."""
    depth: int = 2
    """Transformer blocks in each encoder."""
    heads: int = 4
    predictor_dim: int = 32
    predictor_depth: int = 2
    mlp_ratio: int = 2
    n_reg: int = 0
    """[REG] tokens prepended to T-JEPA's encoder inputs (0 = none); Var-T-JEPA has none."""
    pooling: str = "flatten"
    """How ``embed`` turns (B, F, d) column tokens into one vector: flatten or mean."""

    def __post_init__(self):
        for name in ("dim", "depth", "heads", "predictor_dim", "predictor_depth", "mlp_ratio"):
            if getattr(self, name) < 1:
                raise ValueError(f"ModelConfig.{name} must be >= 1, got {getattr(self, name)}")
        if self.dim % self.heads or self.predictor_dim % self.heads:
            raise ValueError(f"dim and predictor_dim must be multiples of heads ({self.heads})")
        if self.n_reg < 0:
            raise ValueError(f"n_reg must be >= 0, got {self.n_reg}")
        if self.pooling not in ("flatten", "mean"):
            raise ValueError(f"pooling must be 'flatten' or 'mean', got {self.pooling!r}")


class TokenTransformer(nn.Module):
    """Pre-norm transformer over a token sequence (B, L, d) -> (B, L, d), final LayerNorm."""

    def __init__(self, dim: int, depth: int, heads: int, mlp_ratio: int):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            dim, heads, mlp_ratio * dim, dropout=0.0, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.blocks(x))


def _gather(tokens: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """tokens (B, F, d), idx (B, n) -> (B, n, d)."""
    return tokens.gather(1, idx.unsqueeze(-1).expand(-1, -1, tokens.shape[-1]))


class _Predictor(nn.Module):
    """Context outputs (B, n_C, d_in) at their columns + one mask token per target column ->
    (B, n_T, d_out) at the target columns."""

    def __init__(self, n_features: int, d_in: int, d_out: int, cfg: ModelConfig):
        super().__init__()
        p = cfg.predictor_dim
        self.proj_in = nn.Linear(d_in, p)
        self.pos = nn.Parameter(torch.randn(n_features, p) * 0.02)
        self.mask_token = nn.Parameter(torch.zeros(p))
        self.body = TokenTransformer(p, cfg.predictor_depth, cfg.heads, cfg.mlp_ratio)
        self.proj_out = nn.Linear(p, d_out)

    def forward(self, ctx: torch.Tensor, masks: ContextTargetMasks) -> torch.Tensor:
        n_t = masks.target.shape[1]
        h_ctx = self.proj_in(ctx) + self.pos[masks.context]  # (B, n_C, p)
        h_tgt = self.mask_token + self.pos[masks.target]  # (B, n_T, p)
        h = self.body(torch.cat([h_ctx, h_tgt], dim=1))
        return self.proj_out(h[:, -n_t:])


class _Pretrained(nn.Module):
    """safetensors weights + a JSON config; the shared save / load of both models."""

    kind = ""

    def _init_args(self) -> dict:
        return {
            "n_numerical": self.n_numerical,
            "cardinalities": self.cardinalities,
            "config": asdict(self.cfg),
        }

    def save_pretrained(self, directory: str | os.PathLike, extra: dict | None = None) -> Path:
        """Write ``model.safetensors`` and ``config.json`` atomically into ``directory``."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().contiguous().cpu() for k, v in self.state_dict().items()}
        meta = {"kind": self.kind, **self._init_args(), **(extra or {})}
        atomic_write(directory / "model.safetensors", lambda p: save_file(state, p))
        atomic_write(
            directory / "config.json", lambda p: Path(p).write_text(json.dumps(meta, indent=2))
        )
        return directory

    @staticmethod
    def read_config(directory: str | os.PathLike) -> dict:
        path = Path(directory) / "config.json"
        if not path.is_file():
            raise ValueError(f"{directory}: no config.json (not a saved model folder)")
        try:
            return json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not valid JSON ({e})") from None


def load_pretrained(directory: str | os.PathLike) -> TJEPA | VarTJEPA:
    """A model saved by ``save_pretrained`` (either kind); weights read from safetensors only."""
    meta = _Pretrained.read_config(directory)
    kinds = {"tjepa": TJEPA, "vartjepa": VarTJEPA}
    if meta.get("kind") not in kinds:
        raise ValueError(f"{directory}: config.json kind must be one of {sorted(kinds)}")
    model = kinds[meta["kind"]](
        meta["n_numerical"], meta["cardinalities"], ModelConfig(**meta["config"])
    )
    weights = Path(directory) / "model.safetensors"
    if not weights.is_file():
        raise ValueError(f"{directory}: no model.safetensors")
    model.load_state_dict(load_file(weights))
    return model


def _pool(tokens: torch.Tensor, pooling: str) -> torch.Tensor:
    return tokens.flatten(1) if pooling == "flatten" else tokens.mean(1)


class TJEPA(_Pretrained):
    """T-JEPA: context encoder, EMA target encoder, predictor; optional [REG] tokens.

    ``loss(rows, masks)`` is the mean squared error between the predictor's outputs and the
    layer-normed target-encoder outputs at the target columns (no gradient into the target).
    Call ``update_target(momentum)`` after each optimiser step.
    """

    kind = "tjepa"

    def __init__(self, n_numerical: int, cardinalities: list[int], cfg: ModelConfig):
        super().__init__()
        self.n_numerical, self.cardinalities, self.cfg = n_numerical, list(cardinalities), cfg
        n_features = n_numerical + len(cardinalities)
        if n_features < 2:
            raise ValueError(f"T-JEPA needs at least 2 columns, got {n_features}")
        d = cfg.dim
        self.embed_context = FeatureEmbedding(n_numerical, cardinalities, d)
        self.context_encoder = TokenTransformer(d, cfg.depth, cfg.heads, cfg.mlp_ratio)
        self.reg = nn.Parameter(torch.randn(cfg.n_reg, d) * 0.02)
        self.predictor = _Predictor(n_features, d, d, cfg)
        # the target branch is an EMA copy of the whole context branch, [REG] tokens included
        self.embed_target = copy.deepcopy(self.embed_context).requires_grad_(False)
        self.target_encoder = copy.deepcopy(self.context_encoder).requires_grad_(False)
        self.target_reg = nn.Parameter(self.reg.detach().clone(), requires_grad=False)

    @property
    def n_features(self) -> int:
        return self.n_numerical + len(self.cardinalities)

    def _run(self, encoder: nn.Module, reg: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        reg = reg.expand(tokens.shape[0], -1, -1)
        return encoder(torch.cat([reg, tokens], dim=1))[:, self.cfg.n_reg :]  # drop [REG]

    def loss(self, rows: EncodedRows, masks: ContextTargetMasks) -> tuple[torch.Tensor, dict]:
        with torch.no_grad():
            full = self._run(self.target_encoder, self.target_reg, self.embed_target(rows))
            target = F.layer_norm(_gather(full, masks.target), (self.cfg.dim,))  # (B, n_T, d)
        tokens = _gather(self.embed_context(rows), masks.context)
        ctx = self._run(self.context_encoder, self.reg, tokens)
        pred = self.predictor(ctx, masks)  # (B, n_T, d)
        loss = F.mse_loss(pred, target)
        return loss, {"loss": loss.detach()}

    @torch.no_grad()
    def update_target(self, momentum: float):
        """EMA: target <- m target + (1 - m) context."""
        pairs = (
            (self.embed_target, self.embed_context),
            (self.target_encoder, self.context_encoder),
        )
        for tgt, src in pairs:
            for pt, ps in zip(tgt.parameters(), src.parameters(), strict=True):
                pt.mul_(momentum).add_(ps.detach(), alpha=1 - momentum)
        self.target_reg.mul_(momentum).add_(self.reg.detach(), alpha=1 - momentum)

    @torch.no_grad()
    def encode(self, rows: EncodedRows, encoder: str = "target") -> torch.Tensor:
        """Column tokens (B, F, d) on whole rows: of the EMA target encoder (T-JEPA's
        representation) or of the context encoder (``encoder="context"``)."""
        if encoder == "target":
            return self._run(self.target_encoder, self.target_reg, self.embed_target(rows))
        if encoder == "context":
            return self._run(self.context_encoder, self.reg, self.embed_context(rows))
        raise ValueError(f"encoder must be 'target' or 'context', got {encoder!r}")

    @torch.no_grad()
    def embed(self, rows: EncodedRows, encoder: str = "target") -> torch.Tensor:
        """One vector per row, (B, F d) flattened or (B, d) mean-pooled (``cfg.pooling``)."""
        return _pool(self.encode(rows, encoder), self.cfg.pooling)


class VarTJEPA(_Pretrained):
    """Var-T-JEPA: Gaussian encoders q(z_C | x_C), q(z_T | x_T), conditional prior p(z_T | z_C),
    per-column decoders; trained by ``loss(rows, masks)`` = -ELBO (``beta`` on the KL terms)."""

    kind = "vartjepa"

    def __init__(
        self, n_numerical: int, cardinalities: list[int], cfg: ModelConfig, beta: float = 1.0
    ):
        super().__init__()
        self.n_numerical, self.cardinalities, self.cfg = n_numerical, list(cardinalities), cfg
        n_features = n_numerical + len(cardinalities)
        if n_features < 2:
            raise ValueError(f"Var-T-JEPA needs at least 2 columns, got {n_features}")
        if not 0 <= beta < float("inf"):
            raise ValueError(f"beta must be a finite number >= 0, got {beta}")
        self.beta = beta
        d = cfg.dim
        # q(z_C | x_C) and q(z_T | x_T): two encoders, each a (mean, log-variance) head per column
        self.embed_context = FeatureEmbedding(n_numerical, cardinalities, d)
        self.context_encoder = TokenTransformer(d, cfg.depth, cfg.heads, cfg.mlp_ratio)
        self.context_head = nn.Linear(d, 2 * d)
        self.embed_target = FeatureEmbedding(n_numerical, cardinalities, d)
        self.target_encoder = TokenTransformer(d, cfg.depth, cfg.heads, cfg.mlp_ratio)
        self.target_head = nn.Linear(d, 2 * d)
        # p(z_T | z_C): the predictor, outputting a Gaussian per target column
        self.prior = _Predictor(n_features, d, 2 * d, cfg)
        # p(x_j | z_j): shared trunk, per-column heads
        self.decoder_pos = nn.Parameter(torch.randn(n_features, d) * 0.02)
        self.decoder = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, 2 * d))
        # heads only for the column types present: a parameter that never reaches the loss
        # stalls DistributedDataParallel
        for name in ("num_w", "num_b", "num_logvar", "cat_w", "cat_b"):
            self.register_parameter(name, None)
        if n_numerical:
            self.num_w = nn.Parameter(torch.randn(n_numerical, 2 * d) / (2 * d) ** 0.5)
            self.num_b = nn.Parameter(torch.zeros(n_numerical))
            self.num_logvar = nn.Parameter(torch.zeros(n_numerical))
        width = max([k + 1 for k in self.cardinalities], default=1)
        if cardinalities:
            self.cat_w = nn.Parameter(
                torch.randn(len(cardinalities), 2 * d, width) / (2 * d) ** 0.5
            )
            self.cat_b = nn.Parameter(torch.zeros(len(cardinalities), width))
        valid = torch.zeros(len(cardinalities), width, dtype=torch.bool)
        for j, k in enumerate(self.cardinalities):
            valid[j, : k + 1] = True
        self.register_buffer("cat_valid", valid, persistent=False)

    def _init_args(self) -> dict:
        return {**super()._init_args(), "beta": self.beta}

    @property
    def n_features(self) -> int:
        return self.n_numerical + len(self.cardinalities)

    # -- the distributions -----------------------------------------------------------------

    @staticmethod
    def _gaussian(head: nn.Module, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        mu, logvar = head(h).chunk(2, dim=-1)
        return mu, logvar.clamp(*LOGVAR_RANGE)

    def posterior_context(self, rows: EncodedRows, columns: torch.Tensor | None = None):
        """q(z_C | x_C): (mu, logvar), each (B, n_C, d); ``columns`` (B, n_C) or all columns."""
        tokens = self.embed_context(rows)
        if columns is not None:
            tokens = _gather(tokens, columns)
        return self._gaussian(self.context_head, self.context_encoder(tokens))

    def posterior_target(self, rows: EncodedRows, columns: torch.Tensor):
        """q(z_T | x_T): (mu, logvar), each (B, n_T, d), from the target columns alone."""
        tokens = _gather(self.embed_target(rows), columns)
        return self._gaussian(self.target_head, self.target_encoder(tokens))

    def conditional_prior(self, z_context: torch.Tensor, masks: ContextTargetMasks):
        """p(z_T | z_C): (mu, logvar), each (B, n_T, d), at the target columns."""
        mu, logvar = self.prior(z_context, masks).chunk(2, dim=-1)
        return mu, logvar.clamp(*LOGVAR_RANGE)

    def log_likelihood(self, rows: EncodedRows, z: torch.Tensor, columns: torch.Tensor):
        """log p(x_j | z_j) summed over the given columns, per row: (B,). Numerical values that
        are missing contribute nothing; a categorical missing code is an outcome like any other."""
        h = self.decoder(z + self.decoder_pos[columns])  # (B, n, 2d)
        is_num = columns < self.n_numerical
        j_num = columns.clamp(max=self.n_numerical - 1) if self.n_numerical else columns * 0
        out = torch.zeros(z.shape[:2], device=z.device, dtype=z.dtype)
        if self.n_numerical:
            mean = (h * self.num_w[j_num]).sum(-1) + self.num_b[j_num]
            x = rows.num.gather(1, j_num)
            seen = is_num & ~rows.num_missing.gather(1, j_num)
            logvar = self.num_logvar[j_num].clamp(min=-6.0)
            ll = gaussian_log_likelihood(x, mean, logvar)
            out = out + torch.where(seen, ll, torch.zeros_like(ll))
        if self.cardinalities:
            j_cat = (columns - self.n_numerical).clamp(min=0)
            logits = torch.einsum("bnh,bnhk->bnk", h, self.cat_w[j_cat]) + self.cat_b[j_cat]
            logits = logits.masked_fill(~self.cat_valid[j_cat], float("-inf"))
            codes = rows.cat.gather(1, j_cat).unsqueeze(-1)
            ll = logits.log_softmax(-1).gather(-1, codes).squeeze(-1)
            out = out + torch.where(is_num, torch.zeros_like(ll), ll)
        return out.sum(1)

    # -- the bound -------------------------------------------------------------------------

    def elbo(self, rows: EncodedRows, masks: ContextTargetMasks, generator=None) -> ElboTerms:
        """The ELBO's terms for one draw of z_C and z_T (per-row means)."""
        mu_c, lv_c = self.posterior_context(rows, masks.context)
        mu_t, lv_t = self.posterior_target(rows, masks.target)
        z_c = reparameterize(mu_c, lv_c, generator)
        z_t = reparameterize(mu_t, lv_t, generator)
        mu_p, lv_p = self.conditional_prior(z_c, masks)
        return elbo_terms(
            self.log_likelihood(rows, z_t, masks.target),
            self.log_likelihood(rows, z_c, masks.context),
            gaussian_kl(mu_t, lv_t, mu_p, lv_p).sum((1, 2)),  # KL(q(z_T|x_T) || p(z_T|z_C))
            gaussian_kl(mu_c, lv_c).sum((1, 2)),  # KL(q(z_C|x_C) || N(0, I))
            self.beta,
        )

    def loss(self, rows: EncodedRows, masks: ContextTargetMasks) -> tuple[torch.Tensor, dict]:
        terms = self.elbo(rows, masks)
        return terms.loss, {"loss": terms.loss.detach()} | {
            k: v.detach() for k, v in terms._asdict().items()
        }

    def update_target(self, momentum: float):
        """No EMA in Var-T-JEPA: both encoders learn from the ELBO. Kept so trainers treat both
        models alike."""

    # -- representations -------------------------------------------------------------------

    @torch.no_grad()
    def encode(self, rows: EncodedRows, return_std: bool = False, encoder: str = "context"):
        """Posterior mean (B, F, d) on whole rows, every column given to the encoder: of
        q(z_C | x) (the default representation) or of q(z_T | x) (``encoder="target"``); with
        ``return_std`` also the posterior standard deviation (B, F, d)."""
        if encoder == "context":
            mu, logvar = self.posterior_context(rows)
        elif encoder == "target":
            every = torch.arange(self.n_features, device=rows.num.device).expand(len(rows), -1)
            mu, logvar = self.posterior_target(rows, every)
        else:
            raise ValueError(f"encoder must be 'context' or 'target', got {encoder!r}")
        return (mu, torch.exp(0.5 * logvar)) if return_std else mu

    @torch.no_grad()
    def embed(self, rows: EncodedRows, return_std: bool = False, encoder: str = "context"):
        """One vector per row (``cfg.pooling``); with ``return_std`` also the pooled posterior
        standard deviation (for ``mean`` pooling, the std of the mean of independent columns)."""
        mu, std = self.encode(rows, return_std=True, encoder=encoder)
        out = _pool(mu, self.cfg.pooling)
        if not return_std:
            return out
        if self.cfg.pooling == "flatten":
            return out, std.flatten(1)
        return out, std.square().mean(1).div(mu.shape[1]).sqrt()

    @torch.no_grad()
    def prediction_uncertainty(self, rows: EncodedRows, masks: ContextTargetMasks):
        """Per target column: the predictor's variance (mean over latent dims of p(z_T | z_C),
        z_C at its posterior mean) and its squared error against q(z_T | x_T)'s mean: (B, n_T)
        each. Does a large predicted variance mean a large error?"""
        mu_c, _ = self.posterior_context(rows, masks.context)
        mu_t, _ = self.posterior_target(rows, masks.target)
        mu_p, lv_p = self.conditional_prior(mu_c, masks)
        return lv_p.exp().mean(-1), (mu_p - mu_t).square().mean(-1)
