"""The headline experiment at small scale: can LUCID single out one key among many similar ones?

1. Correlated-keys probe (no training): output cosine to the queried value against cluster size,
   softmax at temperature 1 and 0.5 vs LUCID (``tasks.correlated_keys_probe``).
2. MQAR (multi-query associative recall with filler): small 2-layer models, softmax vs LUCID at
   equal steps and parameters, several seeds; steps to reach the accuracy threshold (learning is a
   phase transition, so single seeds are noise).
3. A character LM on ``pydoc_data.topics``: LUCID should not hurt ordinary LM loss.

``experiment`` measures, ``verdict`` (pure) turns the measurements into one row per claim, with
the rules fixed before the first full run: (a) probe: LUCID's cosine beats both softmax
temperatures by at least 0.1 at the largest cluster size; (b) MQAR, one row per setting: LUCID
solves more seeds than softmax, or as many (at least one) in fewer median steps (unsolved =
budget); (c) LM: LUCID's held-out loss is within 2% of softmax's.
"""

import json
import statistics
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path

import torch

from icml26.lucid._results import (
    as_smoke,
    claim_row,
    demo_command,
    package_version,
    resolve_device,
    summarise,
    write_results,
)
from icml26.lucid.tasks import correlated_keys_probe
from icml26.lucid.train import train_char_lm, train_mqar

PACKAGE = "icml26-lucid"
KINDS = ("softmax", "lucid")
SOFTMAX_PROBES = ("softmax (T=1)", "softmax (T=0.5)")
MEDIAN = "median steps to solve (unsolved = budget)"
PROBE_MARGIN = 0.1
"""(a): LUCID's probe cosine must beat both softmax temperatures by this much."""
LM_TOLERANCE = 1.02
"""(c): LUCID's held-out loss may be at most this many times softmax's."""


@dataclass(frozen=True)
class DemoConfig:
    """LUCID vs softmax: correlated-keys probe, MQAR steps-to-solve, character LM loss."""

    quick: bool = False
    """Tiny budgets: finishes in seconds (numbers are not meaningful)."""
    out: Path | None = None
    """Run folder (default runs/lucid/<timestamp>)."""
    seed: int = 0
    """First seed; MQAR and LM runs use seed, seed+1, ..."""
    probe_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    """Cluster sizes of the correlated-keys probe."""
    probe_trials: int = 64
    """Random problems per cluster size."""
    mqar_seq_lens: tuple[int, ...] = (24,)
    """MQAR sequence lengths (paired with ``mqar_pairs``)."""
    mqar_pairs: tuple[int, ...] = (2,)
    """MQAR key-value pairs per sequence."""
    mqar_seeds: int = 5
    """Seeds per MQAR setting and attention kind."""
    mqar_steps: int = 600
    """Step budget per MQAR run."""
    mqar_dim: int = 64
    """Model width for MQAR."""
    mqar_vocab: int = 17
    """MQAR vocabulary: filler + 8 keys + 8 values."""
    mqar_lr: float = 3e-3
    """AdamW learning rate for MQAR."""
    mqar_batch: int = 128
    """MQAR sequences per step (at 32 neither attention left the plateau within 1500 steps)."""
    mqar_threshold: float = 0.9
    """Accuracy that counts as solved."""
    lm_steps: int = 200
    """Training steps of the character LM."""
    lm_seeds: int = 1
    """Seeds of the character LM per attention kind."""
    rope_base: float | None = 10000.0
    """Rotary position embeddings (Llama's) in every model of the demo; None: learned absolute
    positions (with those, neither attention solved MQAR within the budget)."""
    device: str = "auto"
    """auto (CUDA when present), cpu, cuda, cuda:N"""

    def resolved(self) -> "DemoConfig":
        if not self.quick:
            return self
        return replace(
            self,
            probe_sizes=(1, 4, 16),
            probe_trials=8,
            mqar_seeds=1,
            mqar_steps=20,
            lm_steps=10,
            lm_seeds=1,
        )

    def validate(self) -> None:
        if len(self.mqar_seq_lens) != len(self.mqar_pairs) or not self.mqar_seq_lens:
            raise ValueError("mqar_seq_lens and mqar_pairs must be non-empty and of equal length")
        if any(3 * p > t for t, p in zip(self.mqar_seq_lens, self.mqar_pairs, strict=True)):
            raise ValueError("every MQAR setting needs 3 * pairs <= seq_len")
        for name in (
            "probe_trials",
            "mqar_seeds",
            "mqar_steps",
            "mqar_dim",
            "mqar_vocab",
            "mqar_batch",
            "lm_steps",
            "lm_seeds",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.rope_base is not None and not self.rope_base > 1:
            raise ValueError(f"rope_base must be > 1 (or None), got {self.rope_base}")
        if not self.probe_sizes or min(self.probe_sizes) < 1:
            raise ValueError(f"probe_sizes must be positive, got {self.probe_sizes}")


# --- the experiment: measurements only ---


def experiment(cfg: DemoConfig) -> dict:
    """Probe, MQAR and character LM for both attentions on ``cfg.device`` (a resolved device, not
    ``auto``); the raw measurements, no verdict."""
    torch.set_num_threads(1)
    probe = correlated_keys_probe(
        list(cfg.probe_sizes), trials=cfg.probe_trials, seed=cfg.seed, device=cfg.device
    )
    mqar, devices = {}, set()
    for T, P in zip(cfg.mqar_seq_lens, cfg.mqar_pairs, strict=True):
        mqar[f"T={T} pairs={P}"] = {}
        for kind in KINDS:
            runs = [_train_mqar(cfg, kind, T, P, cfg.seed + s) for s in range(cfg.mqar_seeds)]
            devices |= {r.device for r in runs}
            steps = [r.steps_to_solve for r in runs]
            mqar[f"T={T} pairs={P}"][kind] = {
                "solved": sum(s is not None for s in steps),
                MEDIAN: statistics.median(cfg.mqar_steps if s is None else s for s in steps),
                "steps per seed": steps,
                "final accuracy per seed": [round(r.final_accuracy, 4) for r in runs],
            }
    lm = {
        kind: [
            train_char_lm(
                kind,
                cfg.lm_steps,
                cfg.seed + s,
                rope_base=cfg.rope_base,
                device=cfg.device,
                progress=True,
            )
            for s in range(cfg.lm_seeds)
        ]
        for kind in KINDS
    }
    (device,) = devices  # every model trained on cfg.device
    return {
        "probe": {"cluster sizes": list(cfg.probe_sizes), "trials": cfg.probe_trials, **probe},
        "mqar": mqar,
        "mqar budget": cfg.mqar_steps,
        "char LM": lm,
        "device": device,
    }


def _train_mqar(cfg: DemoConfig, kind: str, seq_len: int, pairs: int, seed: int):
    return train_mqar(
        kind,
        seq_len,
        pairs,
        cfg.mqar_steps,
        seed,
        vocab=cfg.mqar_vocab,
        dim=cfg.mqar_dim,
        lr=cfg.mqar_lr,
        threshold=cfg.mqar_threshold,
        batch=cfg.mqar_batch,
        rope_base=cfg.rope_base,
        device=cfg.device,
        progress=True,
    )


# --- the verdict: a pure function of the measurements, one row per claim ---


def verdict(results: dict) -> tuple[list[dict], str]:
    """(one claim row per claim of the paper, the package verdict that summarises them)."""
    claims = [
        _probe_claim(results["probe"]),
        *(_mqar_claim(s, r, results["mqar budget"]) for s, r in results["mqar"].items()),
        _lm_claim(results["char LM"]),
    ]
    return claims, summarise([c["verdict"] for c in claims])


def _probe_claim(probe: dict) -> dict:
    sizes = probe["cluster sizes"]
    i = sizes.index(max(sizes))
    lucid = probe["LUCID"][i]
    softmax = {name: probe[name][i] for name in SOFTMAX_PROBES}
    held = all(lucid >= v + PROBE_MARGIN for v in softmax.values())
    return claim_row(
        "LUCID singles out the queried key among many similar ones (correlated-keys probe)",
        "reproduced" if held else "not reproduced",
        f"cosine to the queried value, cluster of {sizes[i]} keys, {probe['trials']} problems: "
        f"LUCID {lucid:.3f} vs softmax T=1 {softmax['softmax (T=1)']:.3f}, "
        f"T=0.5 {softmax['softmax (T=0.5)']:.3f} (rule: LUCID >= both + {PROBE_MARGIN})",
    )


def _mqar_claim(setting: str, runs: dict, budget: int) -> dict:
    lucid, softmax = runs["lucid"], runs["softmax"]
    faster = lucid["solved"] > softmax["solved"] or (
        lucid["solved"] == softmax["solved"] > 0 and lucid[MEDIAN] < softmax[MEDIAN]
    )
    n = len(lucid["steps per seed"])
    steps = {
        k: _mean_std([budget if s is None else s for s in r["steps per seed"]])
        for k, r in runs.items()
    }
    return claim_row(
        f"LUCID learns multi-query associative recall in fewer steps than softmax (MQAR {setting})",
        "reproduced" if faster else "not reproduced",
        f"seeds solved LUCID {lucid['solved']}/{n} vs softmax {softmax['solved']}/{n}; steps to "
        f"solve (unsolved = budget {budget}) median {lucid[MEDIAN]:g} vs {softmax[MEDIAN]:g}, "
        f"mean {steps['lucid']} vs {steps['softmax']} (rule: more seeds solved, or as many "
        "(> 0) in fewer median steps)",
    )


def _lm_claim(lm: dict) -> dict:
    loss = {k: [r["held-out loss"] for r in runs] for k, runs in lm.items()}
    mean = {k: statistics.mean(v) for k, v in loss.items()}
    held = mean["lucid"] <= LM_TOLERANCE * mean["softmax"]
    ratio = mean["lucid"] / mean["softmax"]
    return claim_row(
        "LUCID does not hurt ordinary language-model loss (character LM)",
        "reproduced" if held else "not reproduced",
        f"held-out loss LUCID {_mean_std(loss['lucid'], '.4f')} vs softmax "
        f"{_mean_std(loss['softmax'], '.4f')} nats/char, ratio {ratio:.3f}, "
        f"{len(loss['lucid'])} seed(s) (rule: ratio <= {LM_TOLERANCE})",
    )


def _mean_std(xs: list[float], fmt: str = ".0f") -> str:
    if len(xs) < 2:
        return format(statistics.mean(xs), fmt)
    return f"{statistics.mean(xs):{fmt}} ± {statistics.stdev(xs):{fmt}}"


# --- the run: experiment -> verdict -> results.json, figure, table ---


def run_demo(cfg: DemoConfig) -> dict:
    """Run the three experiments; write results.json and lucid.png; return the results."""
    cfg.validate()
    asked, cfg = cfg, replace(cfg.resolved(), device=resolve_device(cfg.device))
    out = cfg.out or Path("runs") / "lucid" / datetime.now().strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    measured = experiment(cfg)
    claims, summary = verdict(measured)
    if cfg.quick:
        claims, summary = as_smoke(claims)
    results = {
        "package": PACKAGE,
        "version": package_version(PACKAGE, __file__),
        "experiment": "correlated-keys probe; MQAR steps-to-solve "
        f"({cfg.mqar_seeds} seeds, budget {cfg.mqar_steps}); "
        f"pydoc character LM ({cfg.lm_steps} steps)",
        "claim": "LUCID lets a query single out one key among many similar ones (better "
        "associative recall) without hurting ordinary language-model loss",
        "headline": _headline(measured),
        "claims": claims,
        "metrics": _metrics(measured),
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
        **{k: measured[k] for k in ("probe", "mqar", "mqar budget", "char LM")},
    }
    write_results(out / "results.json", results)
    from icml26.lucid.plots import plot_demo

    plot_demo(results, out / "lucid.png")
    _print(results, out)
    return results


def _headline(m: dict) -> str:
    probe = m["probe"]
    i = probe["cluster sizes"].index(max(probe["cluster sizes"]))
    lm = {k: statistics.mean(r["held-out loss"] for r in runs) for k, runs in m["char LM"].items()}
    mqar = "; ".join(
        f"MQAR {s}: seeds solved LUCID {r['lucid']['solved']}/{len(r['lucid']['steps per seed'])}"
        f" vs softmax {r['softmax']['solved']}/{len(r['softmax']['steps per seed'])}"
        for s, r in m["mqar"].items()
    )
    return (
        f"probe (cluster of {probe['cluster sizes'][i]}): cosine LUCID {probe['LUCID'][i]:.2f} vs "
        f"softmax {probe['softmax (T=1)'][i]:.2f}; {mqar}; char LM loss LUCID {lm['lucid']:.3f} "
        f"vs softmax {lm['softmax']:.3f} nats/char"
    )


def _metrics(m: dict) -> dict:
    probe, sizes = m["probe"], m["probe"]["cluster sizes"]

    def group(kind: str, probe_name: str) -> dict:
        g = {
            f"probe cosine, cluster {c}": round(v, 4)
            for c, v in zip(sizes, probe[probe_name], strict=True)
        }
        for setting, per_kind in m["mqar"].items():
            g[f"MQAR {setting} seeds solved"] = per_kind[kind]["solved"]
            g[f"MQAR {setting} median steps"] = per_kind[kind][MEDIAN]
        losses = [r["held-out loss"] for r in m["char LM"][kind]]
        g["char LM held-out loss (nats/char)"] = round(statistics.mean(losses), 4)
        return g

    return {
        "method": group("lucid", "LUCID"),
        "baseline": group("softmax", "softmax (T=1)"),
        "softmax T=0.5 (probe)": {
            f"probe cosine, cluster {c}": round(v, 4)
            for c, v in zip(sizes, probe["softmax (T=0.5)"], strict=True)
        },
    }


def _print(results: dict, out: Path) -> None:
    cfg, probe = results["config"], results["probe"]
    print("\ncorrelated-keys probe: cosine(output, queried value) by cluster size")
    print(f"{'':16s}" + "".join(f"{c:>8d}" for c in probe["cluster sizes"]))
    for name in (*SOFTMAX_PROBES, "LUCID"):
        print(f"{name:16s}" + "".join(f"{v:>8.3f}" for v in probe[name]))
    print(
        f"\nMQAR ({cfg['mqar_seeds']} seeds, budget {cfg['mqar_steps']} steps, "
        f"solved = {cfg['mqar_threshold']:.0%} accuracy)"
    )
    for setting, per_kind in results["mqar"].items():
        for kind, r in per_kind.items():
            print(
                f"{setting:16s} {kind:8s} solved {r['solved']}/{cfg['mqar_seeds']}  median steps "
                f"{r[MEDIAN]}  per seed {r['steps per seed']}"
            )
    print("\nclaims:")
    for c in results["claims"]:
        print(f"  {c['verdict']:<16s}{c['claim']}\n  {'':16s}{c['evidence']}")
    print(f"\nverdict: {results['verdict']}   ({results['seconds']:.0f} s; results in {out})")
