"""HiST attention on sparse graphs: shifted-window local attention + slide calibration tokens.

Two graphs per stage, never an N x N matrix (HiST, Sec. "Sparse attention"):

* **local**: site i attends to site j when both are real (not sentinels) and share a regular
  ``window x window`` window or a window shifted by ``window // 2``; the union of the two, plus
  self-loops. Scores carry a learned relative position bias ``B[h, r_i - r_j, c_i - c_j]``.
* **global**: every site attends to the T slide calibration tokens; every token attends to every
  real site and to every token (itself included). A separate Q/K/V set.

The two attention outputs are summed per site (tokens get only the global one).

Two implementations of the local graph, held equal by the tests:

* :func:`local_attention_edges`: the definition, an explicit edge list with a per-destination
  edge softmax (:func:`edge_softmax`, the scatter form of ``torch_geometric.utils.softmax``);
* :func:`window_attention`: the fast path. Sites are gathered into their windows twice (regular
  and shifted partition); windows are batched by occupancy and padded only to the next power of
  two of it (a varlen batch), and each is a small dense attention. In the shifted pass a key that
  shares the query's *regular* window is masked, so each edge of the union is counted once; the
  two partial softmaxes are merged with their log-sum-exp weights (as in flash attention).
  Memory grows with the number of spots, not with the slide's area.
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from icml26.hist.lattice import check_int, check_sites, unique_sites

NEG = -1e30  # "masked" in fp32 scores; finite, so fully masked rows give zero-weight outputs


def _acc(x: torch.Tensor) -> torch.dtype:
    """Scores and softmax run in fp32 at least (fp64 stays fp64, for the reference tests)."""
    return torch.promote_types(x.dtype, torch.float32)


def _check_qkv(q, k, v, n: int | None = None, names=("q", "k", "v")) -> None:
    """q, k, v: floating (N, H, d) tensors of one shape, N = ``n`` when given."""
    for name, t in zip(names, (q, k, v), strict=True):
        if not isinstance(t, torch.Tensor) or t.ndim != 3 or not t.is_floating_point():
            got = f"{t.dtype} {tuple(t.shape)}" if isinstance(t, torch.Tensor) else type(t).__name__
            raise ValueError(f"{name} must be a floating (N, H, d) tensor, got {got}")
    shapes = [tuple(t.shape) for t in (q, k, v)]
    if len(set(shapes)) > 1:
        raise ValueError(f"{', '.join(names)} must share one shape, got {shapes}")
    if n is not None and shapes[0][0] != n:
        raise ValueError(f"{names[0]} has {shapes[0][0]} rows, the sites number {n}")


def _check_rpb(rpb, heads: int, window: int) -> None:
    if rpb is None:
        return
    if not isinstance(rpb, RelativePositionBias):
        raise TypeError(f"rpb must be a RelativePositionBias or None, got {type(rpb).__name__}")
    if rpb.table.shape[0] != heads or rpb.window != window:
        raise ValueError(
            f"rpb has {rpb.table.shape[0]} heads and window {rpb.window}; the attention has "
            f"{heads} heads and window {window}"
        )


# ----------------------------------------------------------------------------- graph (reference)


def window_ids(coords: torch.Tensor, window: int, shift: int) -> torch.Tensor:
    """(N, 2) sites -> (N,) id of the ``window x window`` cell each falls in, after ``+shift``."""
    return unique_sites(torch.div(coords + shift, window, rounding_mode="floor"))[1]


def local_edges(coords: torch.Tensor, real: torch.Tensor, window: int):
    """Edge list (src, dst) of the local graph: regular ∪ shifted windows ∪ self-loops, real only.

    Edges are unique and sorted by (dst, src).
    """
    check_sites(coords, real)
    check_int("window", window, 2)  # the shifted partition moves by window // 2 >= 1
    n = len(coords)
    idx = torch.arange(n, device=coords.device)[real]
    src, dst = [idx], [idx]  # self-loops
    for shift in (0, window // 2):
        wid = window_ids(coords[real], window, shift)
        order = torch.argsort(wid, stable=True)
        ws, members = wid[order], idx[order]
        counts = torch.bincount(ws)
        starts = torch.cumsum(counts, 0) - counts
        # all ordered pairs inside each window: for member a at rank r in its window, pair it
        # with every member of the window
        reps = counts[ws]
        a = torch.repeat_interleave(members, reps)
        base = torch.repeat_interleave(starts[ws], reps)
        offs = torch.arange(len(a), device=coords.device) - torch.repeat_interleave(
            torch.cumsum(reps, 0) - reps, reps
        )
        b = members[base + offs]
        src.append(b)
        dst.append(a)
    src, dst = torch.cat(src), torch.cat(dst)
    key = torch.unique(dst * n + src)
    return key % n, torch.div(key, n, rounding_mode="floor")


def global_edges(real: torch.Tensor, num_tokens: int):
    """Edge list (src, dst) of the global graph over ``N`` sites followed by ``T`` tokens.

    token -> every real site, every real site -> every token, token -> token (self-loops
    included). Sites get no site -> site edges here.
    """
    if not isinstance(real, torch.Tensor) or real.dtype != torch.bool or real.ndim != 1:
        raise TypeError(f"real must be an (N,) bool tensor, got {getattr(real, 'dtype', real)!r}")
    check_int("num_tokens", num_tokens, 0)
    n = len(real)
    sites = torch.arange(n, device=real.device)[real]
    toks = torch.arange(n, n + num_tokens, device=real.device)
    t2s = (toks.repeat_interleave(len(sites)), sites.repeat(num_tokens))
    s2t = (sites.repeat_interleave(num_tokens), toks.repeat(len(sites)))
    t2t = (toks.repeat_interleave(num_tokens), toks.repeat(num_tokens))
    return torch.cat([t2s[0], s2t[0], t2t[0]]), torch.cat([t2s[1], s2t[1], t2t[1]])


def edge_softmax(scores: torch.Tensor, dst: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """Softmax of edge ``scores`` (E, H) over the incoming edges of each destination node."""
    if not isinstance(scores, torch.Tensor) or scores.ndim != 2 or not scores.is_floating_point():
        raise ValueError(
            f"scores must be a floating (E, H) tensor, got {getattr(scores, 'shape', scores)!r}"
        )
    if not isinstance(dst, torch.Tensor) or dst.is_floating_point() or dst.shape != (len(scores),):
        raise ValueError(
            f"dst must be an ({len(scores)},) integer tensor, one node per edge of scores"
        )
    check_int("num_nodes", num_nodes)
    # the reference path: a device sync here costs nothing that matters
    if len(dst) and not 0 <= int(dst.min()) <= int(dst.max()) < num_nodes:
        raise ValueError(
            f"dst must index nodes 0..{num_nodes - 1}, got {int(dst.min())}..{int(dst.max())}"
        )
    h = scores.shape[1]
    idx = dst.view(-1, 1).expand(-1, h)
    mx = scores.new_full((num_nodes, h), NEG).scatter_reduce(
        0, idx, scores, reduce="amax", include_self=True
    )
    e = torch.exp(scores - mx[dst])
    den = scores.new_zeros(num_nodes, h).index_add(0, dst, e)
    return e / den[dst]


def edge_attention(q, k, v, src, dst, bias=None, dropout_p: float = 0.0, training=False):
    """Graph attention: node i aggregates ``softmax_j(q_i·k_j/sqrt(d) + bias_ij) v_j`` over its
    incoming edges j -> i. q, k, v: (N, H, d); src, dst: (E,); bias: (E, H) or None.
    Nodes without incoming edges get zeros."""
    scores = (q[dst] * k[src]).sum(-1) * q.shape[-1] ** -0.5
    if bias is not None:
        scores = scores + bias
    p = F.dropout(edge_softmax(scores.to(_acc(q)), dst, len(q)), dropout_p, training).to(v.dtype)
    return torch.zeros_like(q).index_add(0, dst, p.unsqueeze(-1) * v[src])


class RelativePositionBias(nn.Module):
    """Learned bias ``B[h, dr, dc]`` for lattice offsets |dr|, |dc| < window (Swin-style table)."""

    def __init__(self, heads: int, window: int, std: float = 0.02):
        super().__init__()
        heads, window = check_int("heads", heads), check_int("window", window)
        if not std >= 0 or std == float("inf"):
            raise ValueError(f"std must be a finite number >= 0, got {std!r}")
        self.window = window
        self.table = nn.Parameter(torch.zeros(heads, 2 * window - 1, 2 * window - 1))
        nn.init.trunc_normal_(self.table, std=std)

    def forward(self, dr: torch.Tensor, dc: torch.Tensor) -> torch.Tensor:
        """Offsets (...) -> bias (..., H)."""
        w = self.window - 1
        for name, t in (("dr", dr), ("dc", dc)):
            if t.numel() and int(t.abs().max()) > w:  # only the reference edge path calls this
                raise ValueError(f"{name}: offsets must lie within +-{w} (window {self.window})")
        return self.table[:, dr + w, dc + w].movedim(0, -1)


def local_attention_edges(q, k, v, coords, real, window, rpb, dropout_p=0.0, training=False):
    """Reference local attention through the explicit edge list. q, k, v: (N, H, d)."""
    _check_qkv(q, k, v, len(coords))
    _check_rpb(rpb, q.shape[1], window)
    src, dst = local_edges(coords, real, window)
    d = coords[dst] - coords[src]
    bias = rpb(d[:, 0], d[:, 1]) if rpb is not None else None
    return edge_attention(q, k, v, src, dst, bias, dropout_p, training)


# ----------------------------------------------------------------------------- fast path


@dataclass
class WindowBucket:
    """Windows of one pass holding at most ``m`` sites each, padded to ``m`` (varlen batching)."""

    members: torch.Tensor  # (W, m) site index, -1 = padding
    ok: torch.Tensor  # (W, m) bool: a real site, allowed as a key
    rel: torch.Tensor  # (W, m, m) index into the flattened bias table (query, key)
    # (W, m, m) bool, shifted pass only: the key is not in the query's regular window
    allowed: torch.Tensor | None


@dataclass
class WindowPlan:
    """The padded window batches of one stage, shared by all its attention layers."""

    window: int
    real: torch.Tensor  # (N,) bool
    passes: list[list[WindowBucket]]  # [regular buckets, shifted buckets]


def _bucketize(wid, coords, real, window, regular=None) -> list[WindowBucket]:
    n = len(wid)
    order = torch.argsort(wid, stable=True)
    counts = torch.bincount(wid)
    starts = torch.cumsum(counts, 0) - counts
    rank = torch.empty_like(order)
    rank[order] = torch.arange(n, device=wid.device) - starts[wid[order]]
    # capacity classes: <= 4, <= 12, <= window**2 sites; windows of similar occupancy batch
    # together (few classes: on a CPU each batch costs fixed overhead)
    s = window * window
    cap = torch.where(counts <= 4, min(4, s), torch.where(counts <= 12, min(12, s), s))
    w = window - 1
    buckets = []
    for c in torch.unique(cap).tolist():
        wins = torch.nonzero(cap == c).flatten()
        slot_of = torch.full_like(counts, -1)
        slot_of[wins] = torch.arange(len(wins), device=wid.device)
        sel = torch.nonzero(slot_of[wid] >= 0).flatten()
        members = torch.full((len(wins), c), -1, dtype=torch.long, device=wid.device)
        members[slot_of[wid[sel]], rank[sel]] = sel
        idx = members.clamp(min=0)
        ok = (members >= 0) & real[idx]
        co = coords[idx]
        d = (co[:, :, None] - co[:, None, :]).clamp(-w, w)  # padding may be far; it is masked
        rel = (d[..., 0] + w) * (2 * w + 1) + d[..., 1] + w
        allowed = None
        if regular is not None:
            r = regular[idx]
            allowed = r[:, :, None] != r[:, None, :]
        buckets.append(WindowBucket(members, ok, rel, allowed))
    return buckets


def plan_windows(coords: torch.Tensor, real: torch.Tensor, window: int) -> WindowPlan:
    """Group the sites of a stage into regular and shifted windows, batched by occupancy.

    Each window is padded only up to its occupancy class (4, 12 or window**2 sites), so a
    sparse scatter of spots costs about as much as a dense tissue with the same number of spots.
    """
    check_sites(coords, real)
    check_int("window", window, 2)
    regular = window_ids(coords, window, 0)
    shifted = window_ids(coords, window, window // 2)
    return WindowPlan(
        window,
        real,
        [
            _bucketize(regular, coords, real, window),
            _bucketize(shifted, coords, real, window, regular=regular),
        ],
    )


def _window_pass(qkv, buckets, table, dropout_p, training):
    n, d = qkv.shape[0], qkv.shape[-1]
    outs, lses, sites = [], [], []
    for b in buckets:
        qb, kb, vb = qkv[b.members.clamp(min=0)].permute(2, 0, 3, 1, 4)  # 3 x (W, H, m, d)
        scores = (qb @ kb.transpose(-1, -2)).to(_acc(qkv)) * d**-0.5  # (W, H, m, m)
        if table is not None:
            scores = scores + table[:, b.rel].transpose(0, 1).to(scores.dtype)
        ok = b.ok[:, None, None, :]
        if b.allowed is not None:
            ok = ok & b.allowed[:, None]
        scores = scores.masked_fill(~ok, NEG)
        lb = torch.logsumexp(scores, -1)  # (W, H, m)
        p = torch.exp(scores - lb.unsqueeze(-1)) * ok
        p = F.dropout(p, dropout_p, training).to(vb.dtype)
        valid = b.members >= 0
        outs.append((p @ vb).transpose(1, 2)[valid])  # (sites, H, d)
        lses.append(lb.transpose(1, 2)[valid])
        sites.append(b.members[valid])
    # every site sits in exactly one window of the pass: one permutation puts them back
    inv = torch.empty(n, dtype=torch.long, device=qkv.device)
    inv[torch.cat(sites)] = torch.arange(n, device=qkv.device)
    return torch.cat(outs)[inv], torch.cat(lses)[inv]


def window_attention(q, k, v, plan: WindowPlan, rpb=None, dropout_p=0.0, training=False):
    """Local attention over regular ∪ shifted windows (fast varlen path). q, k, v: (N, H, d).

    Returns (N, H, d); sentinel (non-real) sites get zeros, as in the edge-list definition.
    """
    if not isinstance(plan, WindowPlan):
        raise TypeError(f"plan must be a WindowPlan from plan_windows, got {type(plan).__name__}")
    _check_qkv(q, k, v, len(plan.real))
    return window_attention_packed(torch.stack([q, k, v], 1), plan, rpb, dropout_p, training)


def window_attention_packed(qkv, plan: WindowPlan, rpb=None, dropout_p=0.0, training=False):
    """:func:`window_attention` on q, k, v packed as (N, 3, H, d) (one gather per window batch),
    the layout a fused QKV projection produces."""
    if qkv.ndim != 4 or qkv.shape[:2] != (len(plan.real), 3):
        raise ValueError(f"qkv must have shape ({len(plan.real)}, 3, H, d), got {tuple(qkv.shape)}")
    _check_rpb(rpb, qkv.shape[2], plan.window)
    table = rpb.table.flatten(1) if rpb is not None else None  # (H, (2w-1)^2)
    o_r, l_r = _window_pass(qkv, plan.passes[0], table, dropout_p, training)
    o_s, l_s = _window_pass(qkv, plan.passes[1], table, dropout_p, training)
    # merge the two partial softmaxes: a row with no allowed key has lse ~ NEG, weight 0
    l_r = torch.where(l_r > NEG / 2, l_r, torch.full_like(l_r, NEG))
    l_s = torch.where(l_s > NEG / 2, l_s, torch.full_like(l_s, NEG))
    lse = torch.logaddexp(l_r, l_s)
    w_r, w_s = torch.exp(l_r - lse).unsqueeze(-1), torch.exp(l_s - lse).unsqueeze(-1)
    out = w_r.to(o_r.dtype) * o_r + w_s.to(o_s.dtype) * o_s
    return out * plan.real.view(-1, 1, 1)


def token_attention(qs, ks, vs, qt, kt, vt, real, dropout_p=0.0, training=False):
    """The global graph, dense over its tiny dimension T. Sites (N, H, d), tokens (T, H, d).

    Sites attend to the tokens only; tokens attend to every real site and every token.
    Returns (site output (N, H, d), token output (T, H, d)); sentinel sites get zeros.
    """
    _check_qkv(qs, ks, vs, names=("qs", "ks", "vs"))
    _check_qkv(qt, kt, vt, names=("qt", "kt", "vt"))
    if qs.shape[1:] != qt.shape[1:]:
        raise ValueError(f"sites and tokens must share (H, d), got {tuple(qs.shape[1:])} and "
                         f"{tuple(qt.shape[1:])}")  # fmt: skip
    check_sites(qs.new_zeros(len(qs), 2, dtype=torch.long), real, name="qs")
    scale = qs.shape[-1] ** -0.5
    p_s = torch.einsum("nhd,thd->nht", qs, kt).to(_acc(qs)).mul(scale).softmax(-1)
    p_s = F.dropout(p_s, dropout_p, training).to(vt.dtype)
    out_s = torch.einsum("nht,thd->nhd", p_s, vt) * real.view(-1, 1, 1)
    keys, vals = torch.cat([ks, kt]), torch.cat([vs, vt])
    ok = torch.cat([real, real.new_ones(len(kt))])
    sc = torch.einsum("thd,mhd->thm", qt, keys).to(_acc(qt)).mul(scale).masked_fill(~ok, NEG)
    p_t = F.dropout(sc.softmax(-1), dropout_p, training).to(vals.dtype)
    return out_s, torch.einsum("thm,mhd->thd", p_t, vals)
