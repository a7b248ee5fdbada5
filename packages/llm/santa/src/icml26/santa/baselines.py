"""SANTA's baselines: dense decode attention is the exact answer every estimator is scored
against; top-k attention (exact scores, then only the k value rows with the largest probability,
renormalised) is the deterministic sparse baseline, given as many value rows as SANTA reads."""

import torch


def topk_attention(q, k, v, rows: int, scale: float | None = None) -> torch.Tensor:
    """The top-k baseline: exact scores, then only the ``rows`` value rows with the largest
    probability (the group's largest over its query heads, so a KV head reads ``rows`` rows for
    all of them), softmax renormalised over them. Deterministic and biased."""
    B, Hq, D = q.shape
    Hkv, N = k.shape[1], k.shape[2]
    G = Hq // Hkv
    s = torch.einsum("bkgd,bknd->bkgn", q.view(B, Hkv, G, D), k) * (scale or D**-0.5)
    p = torch.softmax(s, -1)
    keep = p.amax(2).topk(min(rows, N), -1).indices  # (B, Hkv, rows)
    mask = torch.zeros(B, Hkv, N, dtype=torch.bool, device=q.device).scatter_(-1, keep, True)
    w = torch.softmax(s.masked_fill(~mask[:, :, None], -torch.inf), -1)
    return torch.einsum("bkgn,bknd->bkgd", w, v).reshape(B, Hq, D)
