"""The demo's tasks: multi-query associative recall, the correlated-keys probe, Python's own text.

MQAR (Zoology, Arora et al. 2023), with filler: a sequence lists ``pairs`` key-value pairs
``k_1 v_1 ... k_P v_P``, then a query region of filler tokens in which every key reappears once at
a random position; at each reappearance the target is that key's value. Keys and values come from
disjoint halves of the vocabulary; token 0 is the filler.

Multi-needle retrieval (long context): ``needles`` key-value pairs are hidden at random places in
a haystack of random distractor tokens; the sequence ends with every needle's key once, in random
order, and the target at each is that key's value. Keys, values and distractors come from
disjoint parts of the vocabulary, so the task is retrieval across the whole context, not parsing.

Correlated-keys probe (no training): keys are ``c`` members of a cluster (a centre plus small
noise) among other clusters, values are random; the query is one member. Standard softmax returns
a blend of the cluster's values; LUCID's preconditioner removes the shared part.
"""

import math

import torch
import torch.nn.functional as F

from icml26.kernels.lucid import lucid_attention_reference
from icml26.lucid.baselines import SOFTMAX_ARMS, best_temperature, softmax_outputs


def mqar_batch(
    batch: int,
    seq_len: int,
    pairs: int,
    vocab: int,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, T), targets (B, T) with -100 where nothing is asked) on ``device``.

    ``generator`` is a CPU generator: the batch is drawn on the CPU and then moved, so a seed
    gives the same batch on every device."""
    half = (vocab - 1) // 2
    if pairs < 1 or 2 * pairs + pairs > seq_len or pairs > half:
        raise ValueError(
            f"need 1 <= pairs, 3 * pairs <= seq_len and pairs <= {half}; got pairs={pairs}, "
            f"seq_len={seq_len}, vocab={vocab}"
        )
    keys = (
        torch.stack([torch.randperm(half, generator=generator)[:pairs] for _ in range(batch)]) + 1
    )
    values = torch.randint(half + 1, 2 * half + 1, (batch, pairs), generator=generator)
    tokens = torch.zeros(batch, seq_len, dtype=torch.long)
    tokens[:, 0 : 2 * pairs : 2] = keys
    tokens[:, 1 : 2 * pairs : 2] = values
    targets = torch.full((batch, seq_len), -100, dtype=torch.long)
    region = seq_len - 2 * pairs
    for b in range(batch):
        pos = 2 * pairs + torch.randperm(region, generator=generator)[:pairs]
        order = torch.randperm(pairs, generator=generator)
        tokens[b, pos] = keys[b, order]
        targets[b, pos] = values[b, order]
    return tokens.to(device), targets.to(device)


def needle_batch(
    batch: int,
    seq_len: int,
    needles: int,
    vocab: int,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
) -> tuple[torch.Tensor, torch.Tensor]:
    """(tokens (B, T), targets (B, T) with -100 where nothing is asked) on ``device``, drawn on
    the CPU with ``generator``.

    Vocabulary: tokens ``1 .. K`` are keys and ``K + 1 .. 2K`` values with ``K = vocab // 4``;
    ``2K + 1 .. vocab - 1`` are distractors (token 0 is unused). The needles sit at random
    non-overlapping positions of the first ``T - needles`` tokens, the queries fill the end.
    """
    K = vocab // 4
    if needles < 1 or needles > K or 3 * needles > seq_len or vocab - 1 - 2 * K < 2:
        raise ValueError(
            f"need 1 <= needles <= vocab // 4, 3 * needles <= seq_len and room for distractors; "
            f"got needles={needles}, seq_len={seq_len}, vocab={vocab}"
        )
    body = seq_len - needles
    tokens = torch.randint(2 * K + 1, vocab, (batch, seq_len), generator=generator)
    targets = torch.full((batch, seq_len), -100, dtype=torch.long)
    for b in range(batch):
        keys = torch.randperm(K, generator=generator)[:needles] + 1
        values = torch.randint(K + 1, 2 * K + 1, (needles,), generator=generator)
        # needle i takes slots 2s, 2s + 1 for a distinct s: pairs never overlap
        slots = torch.randperm(body // 2, generator=generator)[:needles] * 2
        tokens[b, slots], tokens[b, slots + 1] = keys, values
        order = torch.randperm(needles, generator=generator)
        tokens[b, body:] = keys[order]
        targets[b, body:] = values[order]
    return tokens.to(device), targets.to(device)


def correlated_keys_probe(
    cluster_sizes: list[int],
    d: int = 64,
    noise: float = 0.15,
    query_noise: float = 0.05,
    clusters: int = 4,
    trials: int = 64,
    seed: int = 0,
    device: torch.device | str = "cpu",
) -> dict[str, list[float]]:
    """Mean cosine between the attention output and the queried key's value, per cluster size.

    Each trial: ``clusters`` clusters of ``c`` keys (centre + ``noise`` x Gaussian, scaled to norm
    sqrt(d)) in random order, random values; the last token's query is its own key plus
    ``query_noise`` (with no query noise LUCID returns the value exactly, by the identity
    ``out_t = v_t / sum_j L_tj``). Softmax at each of ``TEMPERATURES`` and at the best of them
    ("softmax (best T)", tuned per point) vs LUCID. The problems are drawn on the CPU (the same
    problems for a seed on every device) and solved on ``device``.
    """
    g = torch.Generator().manual_seed(seed)
    out: dict[str, list[float]] = {name: [] for name in SOFTMAX_ARMS} | {"LUCID": []}
    for c in cluster_sizes:
        if c < 1:
            raise ValueError(f"cluster sizes must be >= 1, got {c}")
        totals = dict.fromkeys(out, 0.0)
        n = clusters * c
        for _ in range(trials):
            centres = torch.randn(clusters, d, generator=g, dtype=torch.float64)
            members = centres.repeat_interleave(c, 0)
            members = members + noise * torch.randn(n, d, generator=g, dtype=torch.float64)
            k = F.normalize(members[torch.randperm(n, generator=g)], dim=-1) * math.sqrt(d)
            v = torch.randn(n, d, generator=g, dtype=torch.float64)
            q = k + query_noise * math.sqrt(d) * torch.randn(n, d, generator=g, dtype=torch.float64)
            q, k, v = q.to(device), k.to(device), v.to(device)
            target = v[-1]
            logits = q[-1] @ k.T / math.sqrt(d)  # (n,)
            for name, o in softmax_outputs(logits, v).items():
                totals[name] += F.cosine_similarity(o, target, dim=0).item()
            o = lucid_attention_reference(q[None, None], k[None, None], v[None, None])[0, 0, -1]
            totals["LUCID"] += F.cosine_similarity(o, target, dim=0).item()
        for name in out:
            out[name].append(totals[name] / trials)
    out["softmax (best T)"] = best_temperature(out, len(cluster_sizes))
    return out


def pydoc_text() -> str:
    """Python's bundled documentation topics (``pydoc_data.topics``), joined: ~800 kB of English."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def char_tokens(text: str, vocab: int = 128) -> torch.Tensor:
    """Characters as tokens: code points below ``vocab``, everything else mapped to 0."""
    return torch.tensor([ord(ch) if ord(ch) < vocab else 0 for ch in text])
