"""The headline experiment at small scale: EntQuant's rate-distortion curve against the baselines.

For each model (the tiny GPT trained here on Python's docs by default; all-MiniLM-L6-v2 and
SmolLM2-135M with ``--models``), EntQuant at each lambda of the sweep is applied to the linear
layers of the blocks, saved with ``save_compressed``, reloaded with ``load_compressed`` and
evaluated; bits per parameter are read from the saved file. The baselines (RTN, NF4, HQQ, group
64) quantise the same layers; their bits are counted with scales and zeros.

Verdict rule (fixed in advance): (a) rate-distortion: at each baseline rate below 4 bits (3.5 and
2.5 bits/param), the best EntQuant point that costs at most that many bits has a lower distortion
(KL to the original next-token distribution; 1 - cosine for MiniLM) than every baseline at that
rate, on every model run; (b) speed: the measured compression rate extrapolates to a 70B model in
under 10 minutes on this machine. Both: reproduced; one: partly. The paper's comparison with
data-dependent methods (GPTQ and the like) is not run here: the baselines are data-free.
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from importlib.metadata import version
from pathlib import Path

import torch

from icml26.entquant import models
from icml26.entquant.baselines import BASELINES
from icml26.entquant.layers import quantize, target_linears
from icml26.entquant.storage import bits_per_param, load_compressed, save_compressed

PACKAGE = "icml26-entquant"
MODELS = ("tiny-gpt", "minilm", "smollm2")
PARAMS_70B = 70e9


@dataclass(frozen=True)
class DemoConfig:
    """EntQuant's lambda sweep vs RTN / NF4 / HQQ: bits per parameter vs quality, and speed."""

    quick: bool = False
    """Tiny budgets: finishes in seconds (numbers are not meaningful)."""
    out: Path | None = None
    """Run folder (default runs/entquant/<timestamp>)."""
    seed: int = 0
    """Seed of the tiny GPT's initialisation and training."""
    models: tuple[str, ...] = ("tiny-gpt",)
    """Models to compress: tiny-gpt, minilm (extra `models`), smollm2 (extra `smollm2`)."""
    lambdas: tuple[float, ...] = (0.0, 3.9, 14.5, 58.0)
    """EntQuant's lambda sweep (0 = absmax 8-bit; the paper: 3.9, 14.5, 58 ~ 4, 3, 2 bits)."""
    qtype: str = "fp8_e4m3"
    """Code grid: fp8_e4m3 or int8."""
    baselines: tuple[str, ...] = tuple(BASELINES)
    """Baselines to run (group / block size 64)."""
    max_iter: int = 500
    """L-BFGS iterations per matrix."""
    super_weight_sigma: float = 100.0
    """Absmax 8-bit fallback for a matrix whose max |w| exceeds this many robust std devs."""
    gpt_steps: int = 200
    """Training steps of the tiny GPT."""
    gpt_dim: int = 128
    """Width of the tiny GPT."""
    gpt_layers: int = 4
    """Blocks of the tiny GPT."""
    eval_windows: int = 32
    """Held-out windows for perplexity and KL."""
    eval_seq_len: int = 128
    """Tokens per held-out window."""
    sentences: int = 256
    """Held-out sentences for MiniLM's embedding cosine and retrieval agreement."""
    keep_checkpoints: bool = False
    """Keep the compressed checkpoints in the run folder (they are deleted after measuring)."""

    def resolved(self) -> DemoConfig:
        if not self.quick:
            return self
        return replace(
            self,
            lambdas=(0.0, 14.5),
            baselines=("RTN-3",),  # HQQ and NF4 cost ~10 s of imports and set-up each
            max_iter=30,
            gpt_steps=10,
            gpt_dim=64,
            gpt_layers=2,
            eval_windows=4,
            eval_seq_len=64,
            sentences=32,
        )

    def validate(self) -> None:
        bad = [m for m in self.models if m not in MODELS]
        if bad or not self.models:
            raise ValueError(f"models must be a non-empty subset of {MODELS}, got {self.models}")
        unknown = [b for b in self.baselines if b not in BASELINES]
        if unknown:
            raise ValueError(f"unknown baselines {unknown}; choose from {list(BASELINES)}")
        if any(lam < 0 for lam in self.lambdas) or not self.lambdas:
            raise ValueError(f"lambdas must be >= 0 (and at least one), got {self.lambdas}")
        if self.qtype not in ("fp8_e4m3", "int8"):
            raise ValueError(f"qtype must be fp8_e4m3 or int8, got {self.qtype!r}")
        if (
            min(
                self.gpt_steps,
                self.gpt_dim,
                self.gpt_layers,
                self.eval_windows,
                self.eval_seq_len,
                self.sentences,
            )
            < 1
        ):
            raise ValueError("the gpt_*, eval_* and sentences settings must be >= 1")


class _Harness:
    """One model: the original, where its quantisable layers live, and how to score a copy."""

    distortion_key = "KL"

    def __init__(self, name: str, cfg: DemoConfig):
        self.name, self.cfg = name, cfg
        if name == "minilm":
            self.model = models.load_minilm()
            self.sentences = models.pydoc_sentences(cfg.sentences)
            self.ref = models.embed(self.model, self.sentences)
            self.distortion_key = "1 - cosine"
            return
        if name == "tiny-gpt":
            train, held = models.pydoc_text()
            self.model = models.tiny_gpt(cfg.seed, cfg.gpt_dim, cfg.gpt_layers)
            models.train_tiny_gpt(
                self.model, models.byte_tokens(train), cfg.gpt_steps, seed=cfg.seed
            )
            tokens = models.byte_tokens(held)
        else:
            self.model, tok = models.load_smollm2()
            tokens = torch.tensor(tok(models.pydoc_text()[1])["input_ids"])
        self.windows = models.eval_windows(tokens, cfg.eval_windows, cfg.eval_seq_len)
        self.ref = models.next_token_logprobs(self.model, self.windows)

    def body(self, model):
        """The module whose numbered blocks hold the linear layers (the HF model for MiniLM)."""
        return model[0].auto_model if self.name == "minilm" else model

    def set_body(self, model, body):
        if self.name == "minilm":
            model[0].auto_model = body
            return model
        return body

    def score(self, model) -> dict[str, float]:
        if self.name == "minilm":
            q = models.embedding_quality(models.embed(model, self.sentences), self.ref)
            return {"1 - cosine": 1 - q["cosine"], "retrieval agreement": q["retrieval_agreement"]}
        lp = models.next_token_logprobs(model, self.windows)
        q = models.lm_quality(lp, self.ref, self.windows)
        return {"KL": q.kl, "perplexity": q.perplexity}


def run_demo(cfg: DemoConfig) -> dict:
    """Run the sweep on every model; write results.json and entquant.png; return the results."""
    cfg.validate()
    cfg = cfg.resolved()
    out = cfg.out or Path("runs") / "entquant" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    per_model: dict[str, dict] = {}
    quant_params, quant_seconds = 0, 0.0
    for name in cfg.models:
        h = _Harness(name, cfg)
        body = h.body(h.model)
        layer_names = target_linears(body)
        n_params = sum(body.get_submodule(n).weight.numel() for n in layer_names)
        rows = {"original": {"bits/param": 32.0, **h.score(h.model)}}
        for lam in cfg.lambdas:
            q = copy.deepcopy(h.model)
            report = quantize(
                h.body(q),
                lam,
                cfg.qtype,  # type: ignore[arg-type]
                super_weight_sigma=cfg.super_weight_sigma,
                max_iter=cfg.max_iter,
            )
            if lam > 0:
                quant_params += report.num_params
                quant_seconds += sum(r.seconds for r in report.layers)
            ckpt = out / "checkpoints" / f"{name}-lambda{lam:g}"
            save_compressed(h.body(q), ckpt)
            # Evaluate what the file holds. "cached": decode each matrix once (on CPU the reference
            # decoder is a Python loop; decode-on-the-fly is timed by `bench`).
            loaded = h.set_body(q, load_compressed(ckpt, decode="cached"))
            rows[f"EntQuant lambda={lam:g}"] = {
                "bits/param": bits_per_param(ckpt),
                "entropy bits": sum(r.entropy_bits * r.shape[0] * r.shape[1] for r in report.layers)
                / report.num_params,
                "fallback layers": sum(r.fallback for r in report.layers),
                **h.score(loaded),
            }
            if not cfg.keep_checkpoints:
                shutil.rmtree(ckpt)
        for b in cfg.baselines:
            q = copy.deepcopy(h.model)
            qb, bits = h.body(q), 0.0
            with torch.no_grad():
                for n in layer_names:
                    layer = qb.get_submodule(n)
                    res = BASELINES[b](layer.weight)
                    layer.weight.copy_(res.w_hat)
                    bits += res.bits_per_param * layer.weight.numel()
            rows[b] = {"bits/param": bits / n_params, **h.score(q)}
        per_model[name] = {
            "quantised params": n_params,
            "layers": len(layer_names),
            "distortion": h.distortion_key,
            "rows": rows,
        }
    if not cfg.keep_checkpoints:
        shutil.rmtree(out / "checkpoints", ignore_errors=True)
    params_per_s = quant_params / quant_seconds if quant_seconds else None
    verdict, rule, parts = _verdict(per_model, params_per_s)
    seconds = time.perf_counter() - start
    # The headline pair: EntQuant's cheapest point below 4 bits against the best baseline at the
    # lowest baseline rate that is not below it (equal or more bits), on the first model.
    first_model = per_model[cfg.models[0]]
    first, key = first_model["rows"], first_model["distortion"]
    ent_keys = [k for k in first if k.startswith("EntQuant")]
    method_key = min(
        (k for k in ent_keys if first[k]["bits/param"] < 4),
        key=lambda k: first[k]["bits/param"],
        default=ent_keys[-1],
    )
    m_bits = first[method_key]["bits/param"]
    baselines = [k for k in first if k in cfg.baselines]
    rivals = [k for k in baselines if first[k]["bits/param"] >= m_bits]
    if rivals:
        base_key = min(rivals, key=lambda k: (first[k]["bits/param"], first[k][key]))
    else:  # every baseline is cheaper: the closest one
        base_key = min(baselines, key=lambda k: m_bits - first[k]["bits/param"], default="original")
    headline = (
        f"{cfg.models[0]}: {method_key} {m_bits:.2f} bits/param, {key} {first[method_key][key]:.3g}"
        f" vs {base_key} {first[base_key]['bits/param']:.2f} bits, {first[base_key][key]:.3g}"
    )
    if params_per_s:
        headline += f"; 70B in {PARAMS_70B / params_per_s / 60:,.0f} min on this CPU"
    metrics = {
        "method": {**first[method_key], "compression params/s": params_per_s},
        "baseline": first[base_key],
        **{f"{m} {k}": v for m, r in per_model.items() for k, v in r["rows"].items()},
    }
    results = {
        "package": PACKAGE,
        "version": version(PACKAGE),
        "experiment": f"rate-distortion of EntQuant ({cfg.qtype}) vs RTN/NF4/HQQ on "
        + ", ".join(cfg.models),
        "claim": "EntQuant matches data-dependent methods below 4 bits per parameter and "
        "compresses a 70B model in under 10 minutes, without calibration data",
        "metrics": metrics,
        "headline": headline,
        "verdict": verdict,
        "verdict rule": rule,
        "verdict parts": parts,
        "seconds": round(seconds, 2),
        "config": json.loads(json.dumps(asdict(cfg), default=str)),
        "seed": cfg.seed,
        "device": "cpu",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "compression params/s": params_per_s,
        "extrapolated 70B minutes": PARAMS_70B / params_per_s / 60 if params_per_s else None,
        "models": per_model,
    }
    tmp = out / ".results.json.tmp"
    tmp.write_text(json.dumps(results, indent=2))
    tmp.replace(out / "results.json")
    from icml26.entquant.plots import plot_rate_distortion

    plot_rate_distortion(results, out / "entquant.png")
    _print(results, out)
    return results


def _verdict(per_model: dict, params_per_s: float | None) -> tuple[str, str, dict]:
    # (a) needs at least one comparison: with no baseline below 4 bits it cannot hold.
    a, compared = True, False
    for r in per_model.values():
        rows, key = r["rows"], r["distortion"]
        ent = {k: v for k, v in rows.items() if k.startswith("EntQuant")}
        base = {k: v for k, v in rows.items() if k != "original" and k not in ent}
        for rate in sorted({v["bits/param"] for v in base.values() if v["bits/param"] < 4}):
            best_base = min(v[key] for v in base.values() if v["bits/param"] == rate)
            cheaper = [v[key] for v in ent.values() if v["bits/param"] <= rate]
            a = a and bool(cheaper) and min(cheaper) < best_base
            compared = True
    a = a and compared
    b = params_per_s is not None and PARAMS_70B / params_per_s < 600
    held = a + b
    verdict = "reproduced" if held == 2 else "partly" if held else "not reproduced"
    rule = (
        "(a) at each baseline rate below 4 bits/param, the best EntQuant point costing at most "
        "that rate has lower distortion than every baseline at that rate, on every model; "
        "(b) the measured compression rate extrapolates to 70B parameters in < 10 minutes"
    )
    return verdict, rule, {"(a) rate-distortion": a, "(b) 70B in < 10 min": b}


def _print(results: dict, out: Path) -> None:
    for name, r in results["models"].items():
        key = r["distortion"]
        print(f"\n{name}: {r['layers']} layers, {r['quantised params']:,} quantised parameters")
        print(f"{'':24s}{'bits/param':>12s}{key:>14s}")
        for row, v in sorted(r["rows"].items(), key=lambda kv: -kv[1]["bits/param"]):
            print(f"{row:24s}{v['bits/param']:>12.3f}{v[key]:>14.5f}")
    rate = results["compression params/s"]
    if rate:
        print(
            f"\ncompression: {rate:,.0f} params/s on {results['threads']} threads -> 70B in "
            f"{results['extrapolated 70B minutes']:,.0f} min"
        )
    print(f"\nverdict: {results['verdict']}  {results['verdict parts']}")
    print(f"({results['seconds']:.0f} s; results in {out})")
