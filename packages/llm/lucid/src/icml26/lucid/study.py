"""The headline experiment at small scale: can LUCID single out one key among many similar ones?

1. Correlated-keys probe (no training): output cosine to the queried value against cluster size,
   softmax at temperatures 1 to 0.01 and at the best of them (the tuned baseline) vs LUCID, and a
   sweep over query noise and key noise (how far the query is from its key, how tight the
   cluster is) at the largest cluster size.
2. MQAR (multi-query associative recall with filler): small 2-layer models, softmax vs LUCID at
   equal steps and parameters, a grid of settings (sequence length x pairs, 1 or 2 heads, rotary
   or learned positions), several seeds per cell; steps to reach the accuracy threshold
   (learning is a phase transition, so single seeds are noise). In chosen cells, diagnostic
   variants of LUCID's preconditioner: L from detached keys, and strength beta in {2, 4}.
3. Multi-needle retrieval in a haystack of distractors (the paper's headline is long-context
   retrieval), trained from scratch at equal budget, at the longest lengths the demo's budget
   allows (short contexts: 64 and 128 tokens).
4. A character LM on ``pydoc_data.topics``: LUCID should not hurt ordinary LM loss.

``experiment`` measures, ``verdict`` (pure) turns the measurements into one row per claim and
setting: (a) probe: at every point of the noise sweep, LUCID's cosine beats softmax at its best
temperature by at least 0.1 (reproduced everywhere, partly somewhere, not reproduced nowhere);
(b) recall, one row per MQAR cell and per needle length: the difference of mean steps to solve
(unsolved = the budget), LUCID - softmax, with a 95% bootstrap interval over seeds: below 0 ->
reproduced, above 0 -> not reproduced (slower), containing 0 -> not reproduced (a tie); when no
seed of either attention solves, the same on final accuracy, where a tie is untestable here
(neither learned within the budget); (c) LM: LUCID's held-out loss is within 2% of softmax's.
Rule (a) was changed after the full run had started and before any of its results were seen: it
compared against temperatures 1 and 0.5 only.
"""

import os
import statistics
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context

import torch
from tqdm.auto import tqdm

from icml26.lucid.tasks import correlated_keys_probe
from icml26.lucid.train import train_char_lm, train_mqar
from icml26.testing.command import DemoOptions

KINDS = ("softmax", "lucid")


VARIANTS = {"L from detached keys": {"detach_preconditioner": True}, "beta=2": {"beta": 2.0}}
VARIANTS["beta=4"] = {"beta": 4.0}
"""Diagnostic LUCID variants run in ``mqar_variant_cells`` (beta = 1 is LUCID itself)."""


MEDIAN = "median steps to solve (unsolved = budget)"


MEAN = "mean steps to solve (unsolved = budget)"


@dataclass(frozen=True)
class DemoConfig(DemoOptions):
    """LUCID vs softmax: correlated-keys probe, MQAR grid, multi-needle retrieval, character LM.

    ``--quick``: tiny budgets: finishes in seconds (numbers are not meaningful)."""

    seed: int = 0
    """First seed; training runs use seed, seed+1, ..."""
    workers: int = 0
    """Training runs in parallel processes, one thread each (0: one per CPU core on the CPU, one on
    a GPU); the numbers do not depend on it."""
    probe_sizes: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
    """Cluster sizes of the correlated-keys probe."""
    probe_trials: int = 64
    """Random problems per probe point."""
    probe_query_noise: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5)
    """Query noise of the sweep (query = key + noise x sqrt(d) Gaussian); 0.05 is the default."""
    probe_key_noise: tuple[float, ...] = (0.15, 0.3, 0.6)
    """Key noise of the sweep (member = centre + noise Gaussian); 0.15 is the default."""
    mqar_seq_lens: tuple[int, ...] = (24, 64)
    """MQAR sequence lengths (paired with ``mqar_pairs``)."""
    mqar_pairs: tuple[int, ...] = (2, 8)
    """MQAR key-value pairs per sequence."""
    mqar_heads: tuple[int, ...] = (1, 2)
    """Attention heads of the grid (the width is fixed: 1 head of 64 or 2 of 32)."""
    mqar_rope: tuple[bool, ...] = (True, False)
    """Rotary positions (True) or learned absolute ones (False) in the grid."""
    mqar_variant_cells: tuple[str, ...] = ("T=24 pairs=2 heads=2 rope",)
    """Cells in which the diagnostic variants of LUCID also train."""
    mqar_seeds: int = 5
    """Seeds per MQAR cell and attention."""
    mqar_steps: tuple[int, ...] = (600, 1000)
    """Step budget per MQAR run, per setting (paired with ``mqar_seq_lens``)."""
    mqar_dim: int = 64
    """Model width for MQAR and the needle task."""
    mqar_vocab: int = 17
    """MQAR vocabulary: filler + 8 keys + 8 values."""
    mqar_lr: float = 3e-3
    """AdamW learning rate for MQAR and the needle task."""
    mqar_batch: int = 128
    """MQAR sequences per step (at 32 neither attention left the plateau within 1500 steps)."""
    mqar_threshold: float = 0.9
    """Accuracy that counts as solved (MQAR and needles)."""
    needle_seq_lens: tuple[int, ...] = (64, 128)
    """Lengths of the multi-needle task (in one-seed pilots at 128 and 256 neither attention
    left the plateau within 600-1500 steps)."""
    needle_count: int = 4
    """Needles per sequence (each queried once at the end)."""
    needle_vocab: int = 64
    """Needle-task vocabulary: 16 keys, 16 values, 31 distractors."""
    needle_batch: int = 64
    """Needle-task sequences per step."""
    needle_steps: int = 1000
    """Step budget per needle run."""
    needle_seeds: int = 5
    """Seeds per needle length and attention."""
    lm_steps: int = 200
    """Training steps of the character LM."""
    lm_seeds: int = 1
    """Seeds of the character LM per attention kind."""
    rope_base: float = 10000.0
    """Base of the rotary position embeddings (Llama's), wherever rotary positions are used."""

    def quick_settings(self) -> dict:
        return dict(
            probe_sizes=(1, 4, 16),
            probe_trials=8,
            probe_query_noise=(0.05, 0.3),
            probe_key_noise=(0.15,),
            mqar_seq_lens=(24,),
            mqar_pairs=(2,),
            mqar_heads=(2,),
            mqar_rope=(True,),
            mqar_variant_cells=("T=24 pairs=2 heads=2 rope",),
            mqar_seeds=2,
            mqar_steps=(10,),
            mqar_batch=16,
            needle_seq_lens=(32,),
            needle_steps=10,
            needle_seeds=2,
            needle_batch=8,
            lm_steps=10,
            lm_seeds=1,
        )

    def cells(self) -> list[tuple[str, int, int, int, bool, int]]:
        """(name, seq_len, pairs, heads, rope, budget) of every MQAR cell."""
        return [
            (_cell_name(T, P, h, r), T, P, h, r, n)
            for T, P, n in zip(self.mqar_seq_lens, self.mqar_pairs, self.mqar_steps, strict=True)
            for h in self.mqar_heads
            for r in self.mqar_rope
        ]

    def validate(self) -> None:
        lens = {len(self.mqar_seq_lens), len(self.mqar_pairs), len(self.mqar_steps)}
        if len(lens) != 1 or not self.mqar_seq_lens:
            raise ValueError(
                "mqar_seq_lens, mqar_pairs and mqar_steps must be non-empty and of equal length"
            )
        if min(self.mqar_steps) < 1:
            raise ValueError(f"mqar_steps must be >= 1, got {self.mqar_steps}")
        if any(3 * p > t for t, p in zip(self.mqar_seq_lens, self.mqar_pairs, strict=True)):
            raise ValueError("every MQAR setting needs 3 * pairs <= seq_len")
        if any(p > (self.mqar_vocab - 1) // 2 for p in self.mqar_pairs):
            raise ValueError(f"mqar_vocab {self.mqar_vocab} has too few keys for the pairs")
        if not self.mqar_heads or any(h < 1 or self.mqar_dim % h for h in self.mqar_heads):
            raise ValueError(f"mqar_heads must divide mqar_dim {self.mqar_dim}")
        if not self.mqar_rope:
            raise ValueError("mqar_rope needs at least one of True, False")
        names = [c[0] for c in self.resolved().cells()]
        unknown = [c for c in self.resolved().mqar_variant_cells if c not in names]
        if unknown:
            raise ValueError(f"mqar_variant_cells {unknown} are not cells of the grid {names}")
        if not self.needle_seq_lens or any(3 * self.needle_count > t for t in self.needle_seq_lens):
            raise ValueError("needle_seq_lens must be non-empty, each >= 3 * needle_count")
        if self.workers < 0:
            raise ValueError(f"workers must be >= 0 (0: one per CPU core), got {self.workers}")
        for name in (
            "probe_trials",
            "mqar_seeds",
            "mqar_dim",
            "mqar_vocab",
            "mqar_batch",
            "needle_count",
            "needle_batch",
            "needle_steps",
            "needle_seeds",
            "lm_steps",
            "lm_seeds",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if (
            self.needle_count > self.needle_vocab // 4
            or self.needle_vocab - 1 - self.needle_vocab // 2 < 2
        ):
            raise ValueError(f"needle_vocab {self.needle_vocab} is too small for the needles")
        if not self.rope_base > 1:
            raise ValueError(f"rope_base must be > 1, got {self.rope_base}")
        if not self.probe_sizes or min(self.probe_sizes) < 1:
            raise ValueError(f"probe_sizes must be positive, got {self.probe_sizes}")
        if not self.probe_query_noise or not self.probe_key_noise:
            raise ValueError("the probe sweep needs at least one query noise and one key noise")
        if min(self.probe_query_noise) < 0 or min(self.probe_key_noise) < 0:
            raise ValueError("probe noise levels must be >= 0")


def _cell_name(T: int, P: int, heads: int, rope: bool) -> str:
    return f"T={T} pairs={P} heads={heads} {'rope' if rope else 'learned positions'}"


# --- the experiment: measurements only ---


def experiment(cfg: DemoConfig) -> dict:
    """Probe, MQAR grid, needles and character LM on ``cfg.device`` (a resolved device, not
    ``auto``); the raw measurements, no verdict."""
    torch.set_num_threads(1)
    probes = probe_measurements(cfg)
    jobs = _jobs(cfg)
    runs = _run_jobs(cfg, jobs)
    mqar: dict = {}
    needle: dict = {}
    for job, run in zip(jobs, runs, strict=True):
        table = mqar if job["task"] == "mqar" else needle
        table.setdefault(job["cell"], {}).setdefault(job["arm"], []).append(run)
    budget = {c[0]: c[5] for c in cfg.cells()}
    mqar = {c: {a: _summary(r, budget[c]) for a, r in arms.items()} for c, arms in mqar.items()}
    needle = {
        c: {a: _summary(r, cfg.needle_steps) for a, r in arms.items()} for c, arms in needle.items()
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
    (device,) = {r["device"] for r in runs}  # every model trained on cfg.device
    return {
        **probes,
        "mqar": mqar,
        "needle": needle,
        "char LM": lm,
        "device": device,
    }


def probe_measurements(cfg: DemoConfig) -> dict:
    """The correlated-keys probe by cluster size and its noise sweep (no training, seconds)."""
    probe = correlated_keys_probe(
        list(cfg.probe_sizes), trials=cfg.probe_trials, seed=cfg.seed, device=cfg.device
    )
    sweep = []
    for kn in cfg.probe_key_noise:
        for qn in cfg.probe_query_noise:
            point = correlated_keys_probe(
                [max(cfg.probe_sizes)],
                noise=kn,
                query_noise=qn,
                trials=cfg.probe_trials,
                seed=cfg.seed,
                device=cfg.device,
            )
            sweep.append(
                {"key noise": kn, "query noise": qn, **{k: v[0] for k, v in point.items()}}
            )
    return {
        "probe": {"cluster sizes": list(cfg.probe_sizes), "trials": cfg.probe_trials, **probe},
        "probe sweep": {"cluster size": max(cfg.probe_sizes), "points": sweep},
    }


def _jobs(cfg: DemoConfig) -> list[dict]:
    """Every training run of the MQAR grid, its variants and the needle task, in a fixed order."""
    common = {"dim": cfg.mqar_dim, "lr": cfg.mqar_lr, "threshold": cfg.mqar_threshold}
    jobs = []
    for name, T, P, heads, rope, budget in cfg.cells():
        arms = {"softmax": {"kind": "softmax"}, "lucid": {"kind": "lucid"}}
        if name in cfg.mqar_variant_cells:
            arms |= {f"lucid, {v}": {"kind": "lucid", **kw} for v, kw in VARIANTS.items()}
        for arm, kw in arms.items():
            for s in range(cfg.mqar_seeds):
                jobs.append(
                    {
                        "task": "mqar",
                        "cell": name,
                        "arm": arm,
                        "args": (kw["kind"], T, P, budget, cfg.seed + s),
                        "kwargs": common
                        | {k: v for k, v in kw.items() if k != "kind"}
                        | {
                            "vocab": cfg.mqar_vocab,
                            "heads": heads,
                            "batch": cfg.mqar_batch,
                            "rope_base": cfg.rope_base if rope else None,
                        },
                    }
                )
    for T in cfg.needle_seq_lens:
        for kind in KINDS:
            for s in range(cfg.needle_seeds):
                jobs.append(
                    {
                        "task": "needle",
                        "cell": f"T={T} needles={cfg.needle_count}",
                        "arm": kind,
                        "args": (kind, T, cfg.needle_count, cfg.needle_steps, cfg.seed + s),
                        "kwargs": common
                        | {
                            "task": "needle",
                            "vocab": cfg.needle_vocab,
                            "heads": 1,
                            "batch": cfg.needle_batch,
                            "rope_base": cfg.rope_base,
                        },
                    }
                )
    return jobs


def _run_job(job: dict, device: str) -> dict:
    torch.set_num_threads(1)
    r = train_mqar(*job["args"], **job["kwargs"], device=device)
    stats = r.preconditioner
    first = [s for s in stats if s["step"] == stats[0]["step"]] if stats else []
    last = [s for s in stats if s["step"] == stats[-1]["step"]] if stats else []
    return {
        "steps": r.steps_to_solve,
        "final accuracy": round(r.final_accuracy, 4),
        "curve": r.curve,
        "preconditioner, first evaluation": first,
        "preconditioner, last evaluation": last,
        "device": r.device,
    }


def _run_jobs(cfg: DemoConfig, jobs: list[dict]) -> list[dict]:
    bar = tqdm(total=len(jobs), desc="training runs", unit="run")
    # 0: one process per core on the CPU; on a GPU one process (they would share the device)
    workers = cfg.workers or (1 if cfg.device.startswith("cuda") else os.cpu_count() or 1)
    if workers == 1:
        runs = []
        for job in jobs:
            runs.append(_run_job(job, cfg.device))
            bar.update()
        bar.close()
        return runs
    runs: list = [None] * len(jobs)
    # spawn: a fresh interpreter per worker (fork after torch's thread pools is unsafe)
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_run_job, job, cfg.device): i for i, job in enumerate(jobs)}
        for f in as_completed(futures):
            runs[futures[f]] = f.result()
            bar.update()
    bar.close()
    return runs


def _summary(runs: list[dict], budget: int) -> dict:
    steps = [r["steps"] for r in runs]
    filled = [budget if s is None else s for s in steps]
    summary = {
        "budget": budget,
        "solved": sum(s is not None for s in steps),
        MEDIAN: statistics.median(filled),
        MEAN: statistics.mean(filled),
        "steps per seed": steps,
        "final accuracy per seed": [r["final accuracy"] for r in runs],
    }
    for when in ("first evaluation", "last evaluation"):
        rows = [row for r in runs for row in r[f"preconditioner, {when}"]]
        if rows:  # LUCID arms: each statistic averaged over seeds and layers
            names = [k for k in rows[0] if k not in ("step", "layer")]
            summary[f"preconditioner, {when}"] = {
                n: round(statistics.mean(row[n] for row in rows), 4) for n in names
            }
    return summary
