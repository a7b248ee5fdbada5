"""Sparse dyadic resampling between HiST stages (HiST, Sec. "Dyadic U-Net").

Down: each active parent ``p = c // 2`` gathers its up-to-4 children into a 2x2 patch (missing
children contribute zero) and applies a 2x2 stride-2 convolution, i.e. one linear map of the
concatenated children, followed by LayerNorm ("conv"); or Swin's patch merge, LayerNorm on the
concatenation first ("merge"). Up: pixel shuffle, a linear map of the parent to four child slots,
of which only the children present in the cached active set are kept. The slide calibration
tokens take their own linear projection at every resampling step.
"""

from dataclasses import dataclass

import torch
from torch import nn

from icml26.hist.lattice import check_int, check_sites, unique_sites


@dataclass
class Children:
    """How the sites of one stage map onto their parents in the next (coarser) stage."""

    parent: torch.Tensor  # (N,) index of each child's parent
    slot: torch.Tensor  # (N,) 0..3, position (r % 2) * 2 + c % 2 inside the parent's 2x2 patch
    num_parents: int


def coarsen(coords: torch.Tensor, real: torch.Tensor):
    """Parent sites of ``coords`` (N, 2) -> (parent coords (P, 2), parent real (P,), Children).

    A parent is real when any child is real: a sentinel stays a sentinel only while it is alone.
    Parents come sorted by (row, col), so the result does not depend on the input order.
    """
    check_sites(coords, real)
    pc, parent = unique_sites(torch.div(coords, 2, rounding_mode="floor"))
    slot = (coords[:, 0] % 2) * 2 + coords[:, 1] % 2
    preal = torch.zeros(len(pc), dtype=torch.bool, device=coords.device)
    preal[parent[real]] = True
    return pc, preal, Children(parent, slot, len(pc))


def _check_rows(x, rows: int, dim: int, what: str) -> None:
    if not isinstance(x, torch.Tensor) or tuple(x.shape) != (rows, dim):
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must have shape ({rows}, {dim}): one row per {what} of ch, "
                         f"got {got}")  # fmt: skip


def _token_projection(dim_in: int, dim_out: int) -> nn.Module:
    return nn.Sequential(nn.Linear(dim_in, dim_out), nn.LayerNorm(dim_out))


class SparseDown(nn.Module):
    """2x2 stride-2 sparse convolution (or patch merge); tokens get their own projection."""

    def __init__(self, dim_in: int, dim_out: int, mode: str = "conv", tokens: bool = True):
        super().__init__()
        dim_in, dim_out = check_int("dim_in", dim_in), check_int("dim_out", dim_out)
        if mode not in ("conv", "merge"):
            raise ValueError(f"downsample must be 'conv' or 'merge', got {mode!r}")
        self.mode = mode
        self.pre = nn.LayerNorm(4 * dim_in) if mode == "merge" else nn.Identity()
        self.proj = nn.Linear(4 * dim_in, dim_out, bias=False)
        self.post = nn.LayerNorm(dim_out) if mode == "conv" else nn.Identity()
        self.token_proj = _token_projection(dim_in, dim_out) if tokens else None

    def forward(self, x: torch.Tensor, tokens: torch.Tensor, ch: Children):
        """x (N, C_in) -> parents (P, C_out); tokens (T, C_in) -> (T, C_out)."""
        _check_rows(x, len(ch.parent), self.proj.in_features // 4, "child")
        patch = x.new_zeros(ch.num_parents, 4, x.shape[1])
        patch[ch.parent, ch.slot] = x  # (P, 4, C): missing children stay zero
        out = self.post(self.proj(self.pre(patch.flatten(1))))
        return out, None if tokens is None else self.token_proj(tokens)


class PixelShuffleUp(nn.Module):
    """Pixel shuffle restricted to the cached active children; tokens get their own projection."""

    def __init__(self, dim_in: int, dim_out: int, tokens: bool = True):
        super().__init__()
        dim_in, dim_out = check_int("dim_in", dim_in), check_int("dim_out", dim_out)
        self.dim_out = dim_out
        self.proj = nn.Linear(dim_in, 4 * dim_out, bias=False)
        self.norm = nn.LayerNorm(dim_out)
        self.token_proj = _token_projection(dim_in, dim_out) if tokens else None

    def forward(self, x: torch.Tensor, tokens: torch.Tensor, ch: Children):
        """parents (P, C_in) -> children (N, C_out), in the children's cached order."""
        _check_rows(x, ch.num_parents, self.proj.in_features, "parent")
        slots = self.proj(x).view(len(x), 4, self.dim_out)  # (P, 4, C_out)
        tokens = None if tokens is None else self.token_proj(tokens)
        return self.norm(slots[ch.parent, ch.slot]), tokens
