"""The context / target split of a row's features (the JEPA masking, over columns of a table).

For each row a random subset of columns is the context x_C and a disjoint subset the target x_T.
As in T-JEPA (Thimonier et al., ICLR 2025) the sizes are drawn once per batch from share ranges,
so every row of a batch has the same number of context and target columns and the index tensors
stack; which columns they are is drawn per row.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ContextTargetMasks:
    """Column indices: ``context`` (B, n_C) and ``target`` (B, n_T), disjoint in every row."""

    context: torch.Tensor
    target: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("context", "target"):
            t = getattr(self, name)
            if (
                not isinstance(t, torch.Tensor)
                or t.ndim != 2
                or t.is_floating_point()
                or (t.dtype == torch.bool)
            ):
                raise ValueError(f"{name} must be a (B, n) tensor of column indices, got "
                                 f"{getattr(t, 'dtype', type(t).__name__)}")  # fmt: skip
        if len(self.context) != len(self.target):
            raise ValueError(f"context and target must cover the same B rows, got "
                             f"{len(self.context)} and {len(self.target)}")  # fmt: skip

    def to(self, device) -> ContextTargetMasks:
        return ContextTargetMasks(self.context.to(device), self.target.to(device))


def sample_masks(
    batch: int,
    n_features: int,
    generator: torch.Generator,
    context_share: tuple[float, float] = (0.35, 0.7),
    target_share: tuple[float, float] = (0.15, 0.4),
) -> ContextTargetMasks:
    """Draw disjoint context and target columns for ``batch`` rows of ``n_features`` columns.

    The number of context columns is ``round(s_C F)`` with s_C ~ U(context_share), the number of
    target columns ``round(s_T F)`` with s_T ~ U(target_share); both are at least 1 and together
    at most F. Needs F >= 2 (a single column has nothing to predict from).
    """
    if n_features < 2:
        raise ValueError(f"context/target masking needs at least 2 features, got {n_features}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    for name, (lo, hi) in (("context_share", context_share), ("target_share", target_share)):
        if not 0 < lo <= hi < 1:
            raise ValueError(f"{name} must satisfy 0 < low <= high < 1, got {(lo, hi)}")
    u = torch.rand(2, generator=generator).tolist()
    s_c = context_share[0] + u[0] * (context_share[1] - context_share[0])
    s_t = target_share[0] + u[1] * (target_share[1] - target_share[0])
    n_c = min(max(1, round(s_c * n_features)), n_features - 1)
    n_t = min(max(1, round(s_t * n_features)), n_features - n_c)
    # one random permutation per row: its first n_C columns are context, the next n_T target
    perm = torch.rand(batch, n_features, generator=generator).argsort(dim=1)
    context = perm[:, :n_c].sort(dim=1).values
    target = perm[:, n_c : n_c + n_t].sort(dim=1).values
    return ContextTargetMasks(context, target)
