"""SANTA on a real small LM (SmolLM2-135M-Instruct): (a) estimator error, rows read and bias on
attention rows captured at decode time; (b) teacher-forced decoding after a long prompt: greedy
agreement and next-token KL against dense decode; (c) a planted-needle retrieval."""

import copy
import inspect
import json
import math
import os
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.kernels.santa import santa_decode
from icml26.santa.attention import disable_santa, enable_santa
from icml26.santa.model import load_smollm2, python_docs_text, tiny_llama

PACKAGE = "icml26-santa"
NEEDLE = "The secret passphrase is {code}."
QUESTION = "\n\nWhat is the secret passphrase? Answer with the number only."


@dataclass(frozen=True)
class DemoConfig:
    """SANTA vs dense decode on SmolLM2: estimator error, decode agreement, needle retrieval."""

    quick: bool = False
    """Shorter prompts and fewer settings: about half a minute (most of it loading the model)."""
    out: Path | None = None
    """Run folder (default runs/santa/<timestamp>)."""
    model: Literal["smollm2", "tiny"] = "smollm2"
    """SmolLM2-135M-Instruct (needs icml26-santa[model]) or a random tiny Llama (plumbing only)."""
    seed: int = 0
    modes: tuple[str, ...] = ("iid", "systematic", "tile_fixed", "tile_prop")
    samples: tuple[int, ...] = (16, 64, 256)
    """S values."""
    block_n: int = 64
    prompt_tokens: int = 2048
    """Context before decoding in (a) and (b)."""
    decode_tokens: int = 32
    """Teacher-forced decode steps in (b)."""
    capture_layers: tuple[int, ...] = (0, 10, 20, 29)
    estimator_seeds: int = 100
    """Seeds per (mode, S) for the error and bias of (a)."""
    needle_lengths: tuple[int, ...] = (2048, 4096)
    """Context lengths of the needle test (c)."""
    needle_samples: int = 64
    """S used in (c)."""

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
            samples=(16, 64),
            prompt_tokens=384,
            decode_tokens=8,
            estimator_seeds=20,
            needle_lengths=(768,),
            modes=("systematic", "tile_fixed"),
        )


def _write_json_atomic(path: Path, obj) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2)
    os.replace(tmp, path)


def _tokens(tok, text: str, n: int) -> torch.Tensor:
    ids = tok(text, return_tensors="pt").input_ids[0] if tok is not None else None
    if ids is None or len(ids) < n:
        raise ValueError(f"not enough text for {n} tokens")
    return ids[:n][None]


def _cache_kw(model) -> str:
    """transformers renamed ``past_key_values`` to ``cache`` (5.x); use what this version takes."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


@torch.no_grad()
def _capture_rows(model, ids, layers) -> list:
    """q (B, Hq, D), k, v (B, Hkv, N, D) of one decode step at the given layers."""
    rows = []
    attn = [m for m in model.modules() if hasattr(m, "q_proj")]
    wanted = {id(attn[i]) for i in layers if i < len(attn)}

    def grab(module, q, k, v):
        if id(module) in wanted:
            rows.append((q.clone(), k.clone(), v.clone()))

    out = model(ids[:, :-1], use_cache=True)
    state = enable_santa(model, num_samples=1, mode="systematic", capture=grab)
    model(ids[:, -1:], use_cache=True, **{_cache_kw(model): out.past_key_values})
    disable_santa(model)
    del state
    return rows


def _estimator_study(rows, cfg) -> dict:
    res = {}
    for mode in cfg.modes:
        for S in cfg.samples:
            errs, fracs, zs = [], [], []
            for q, k, v in rows:
                group = q.shape[1] // k.shape[1]
                kk, vv = (
                    k.repeat_interleave(group, 1).double(),
                    v.repeat_interleave(group, 1).double(),
                )
                p = torch.softmax(
                    torch.einsum("bhd,bhnd->bhn", q.double(), kk) / q.shape[-1] ** 0.5, -1
                )
                o = torch.einsum("bhn,bhnd->bhd", p, vv)
                rms = vv.pow(2).mean((-1, -2)).sqrt()  # (B, Hq): RMS norm of the value rows
                outs, reads = [], []
                for s in range(cfg.estimator_seeds):
                    r = santa_decode(
                        q.double(), k.double(), v.double(), S, mode, cfg.block_n, seed=s
                    )
                    outs.append(r.out)
                    reads.append(r.rows_read.double().mean().item() / k.shape[2])
                X = torch.stack(outs)
                errs.append(((X - o).norm(dim=-1) / rms).mean().item())
                fracs.append(sum(reads) / len(reads))
                se = X.std(0) / math.sqrt(len(X))
                zs.append(((X.mean(0) - o).abs() / (se + 1e-12)).max().item())
            res[f"{mode} S={S}"] = {
                "relative error": sum(errs) / len(errs),
                "read fraction": sum(fracs) / len(fracs),
                "max |z| of the mean": max(zs),
            }
    return res


@torch.no_grad()
def _decode_study(model, ids, cfg, configs) -> dict:
    """Teacher-forced decode: both dense and SANTA see the dense greedy tokens."""
    prefill = model(ids, use_cache=True)
    cache0 = prefill.past_key_values
    # Dense greedy continuation and its next-token distributions.
    cache = copy.deepcopy(cache0)
    tok = prefill.logits[:, -1].argmax(-1, keepdim=True)
    dense_tokens, dense_logp = [tok], []
    for _ in range(cfg.decode_tokens):
        out = model(tok, use_cache=True, **{_cache_kw(model): cache})
        dense_logp.append(torch.log_softmax(out.logits[:, -1].double(), -1))
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        dense_tokens.append(tok)
    res = {}
    for mode, S in tqdm(configs, desc="decode configs"):
        cache = copy.deepcopy(cache0)
        state = enable_santa(model, S, mode, cfg.block_n, seed=cfg.seed)
        agree, kls = 0, []
        for i in range(cfg.decode_tokens):
            out = model(dense_tokens[i], use_cache=True, **{_cache_kw(model): cache})
            logp = torch.log_softmax(out.logits[:, -1].double(), -1)
            agree += int(logp.argmax(-1).item() == dense_logp[i].argmax(-1).item())
            kls.append((dense_logp[i].exp() * (dense_logp[i] - logp)).sum().item())
        res[f"{mode} S={S}"] = {
            "greedy agreement": agree / cfg.decode_tokens,
            "mean KL": sum(kls) / len(kls),
            "read fraction": state.read_fraction,
        }
        disable_santa(model)
    return res


@torch.no_grad()
def _needle(model, tok, cfg, length: int, mode: str | None) -> dict:
    """A passphrase planted halfway into ``length`` tokens of Python's docs, asked for at the
    end through the instruct model's chat template."""
    code = "48213"
    body = tok(python_docs_text()).input_ids[:length]
    context = (
        tok.decode(body[: length // 2])
        + "\n"
        + NEEDLE.format(code=code)
        + "\n"
        + tok.decode(body[length // 2 :])
    )
    messages = [{"role": "user", "content": context + QUESTION}]
    ids = tok.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    ids = ids if isinstance(ids, torch.Tensor) else ids["input_ids"]
    if mode is not None:
        enable_santa(model, cfg.needle_samples, mode, cfg.block_n, seed=cfg.seed)
    out = model.generate(ids, max_new_tokens=16, do_sample=False)
    if mode is not None:
        disable_santa(model)
    answer = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    return {"answer": answer.strip(), "found": code in answer}


def run_demo(cfg: DemoConfig) -> dict:
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if not c.samples or min(c.samples) < 1 or not c.modes:
            raise ValueError("samples must be integers >= 1 and modes non-empty")
    cfg = cfg.resolved()
    out = cfg.out or Path("runs") / "santa" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    if cfg.model == "smollm2":
        model, tok = load_smollm2()
        ids = _tokens(tok, python_docs_text(), cfg.prompt_tokens)
    else:
        model, tok = tiny_llama(cfg.seed), None
        ids = torch.randint(
            0, 256, (1, cfg.prompt_tokens), generator=torch.Generator().manual_seed(cfg.seed)
        )
    rows = _capture_rows(model, ids, cfg.capture_layers)
    estimator = _estimator_study(rows, cfg)
    configs = [(m, S) for m in cfg.modes for S in cfg.samples]
    decode = _decode_study(model, ids, cfg, configs)
    needle = {}
    if tok is not None:
        for L in tqdm(cfg.needle_lengths, desc="needle"):
            needle[str(L)] = {"dense": _needle(model, tok, cfg, L, None)}
            for mode in cfg.modes:
                needle[str(L)][mode] = _needle(model, tok, cfg, L, mode)
    # --- verdict: "matches baseline accuracy" at S = 64 for the tiled modes ---
    claims = {}
    key_S = 64 if 64 in cfg.samples else max(cfg.samples)
    for mode in cfg.modes:
        d = decode[f"{mode} S={key_S}"]
        claims[f"{mode} S={key_S}: >= 99% greedy agreement"] = d["greedy agreement"] >= 0.99
    if needle:
        claims["needle: every mode finds it wherever dense does"] = all(
            r[m]["found"] or not r["dense"]["found"] for r in needle.values() for m in cfg.modes
        )
    n_ok = sum(claims.values())
    verdict = "reproduced" if n_ok == len(claims) else "not reproduced" if n_ok == 0 else "partly"
    seconds = time.perf_counter() - start
    method = {f"{k} greedy agreement": v["greedy agreement"] for k, v in decode.items()}
    method |= {f"{k} read fraction": v["read fraction"] for k, v in decode.items()}
    baseline = {"dense greedy agreement": 1.0, "dense read fraction": 1.0}
    best = max(decode.items(), key=lambda kv: kv[1]["greedy agreement"])
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"{cfg.model}: decode after {cfg.prompt_tokens} prompt tokens, "
        f"{cfg.decode_tokens} teacher-forced steps; needle at {list(cfg.needle_lengths)}",
        "claim": "sampled value aggregation matches dense decode accuracy while reading a "
        "fraction of the value rows",
        "metrics": {"method": _clean(method), "baseline": baseline},
        "verdict": verdict,
        "headline": f"best greedy agreement {best[1]['greedy agreement']:.0%} ({best[0]}, reads "
        f"{best[1]['read fraction']:.0%} of V rows); "
        + "; ".join(f"{k}: {'yes' if v else 'no'}" for k, v in claims.items()),
        "claims": claims,
        "seconds": round(seconds, 2),
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "seed": cfg.seed,
        "device": "cpu",
        "torch": torch.__version__,
        "estimator": estimator,
        "decode": decode,
        "needle": needle,
    }
    _write_json_atomic(out / "results.json", results)
    from icml26.santa.plots import plot_results

    plot_results(estimator, decode, cfg, out / "santa.png")
    _print(estimator, decode, needle, claims, verdict, seconds, out)
    return results


def _clean(d: dict) -> dict:
    return {
        k: (v if isinstance(v, int | float) and math.isfinite(v) else None) for k, v in d.items()
    }


def _version() -> str:
    from icml26.santa import __version__

    return __version__


def _print(estimator, decode, needle, claims, verdict, seconds, out) -> None:
    print(
        f"\n{'setting':<22}{'rel. error':>11}{'read frac':>10}{'max|z|':>8}"
        f"{'greedy agr':>12}{'KL':>10}"
    )
    for k, e in estimator.items():
        d = decode.get(k, {})
        print(
            f"{k:<22}{e['relative error']:>11.4f}{e['read fraction']:>10.3f}"
            f"{e['max |z| of the mean']:>8.1f}{d.get('greedy agreement', math.nan):>12.3f}"
            f"{d.get('mean KL', math.nan):>10.2e}"
        )
    for L, r in needle.items():
        print(
            f"needle @{L}: "
            + ", ".join(f"{m} {'found' if x['found'] else 'missed'}" for m, x in r.items())
        )
    for k, v in claims.items():
        print(f"  {'yes' if v else 'NO '}  {k}")
    print(f"verdict: {verdict}  ({seconds:.1f} s)  -> {out / 'results.json'}")
