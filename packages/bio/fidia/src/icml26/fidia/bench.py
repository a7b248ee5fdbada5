"""``icml26-fidia bench``: sampling and RL-step throughput against ProteinMPNN's own code.

- sequences sampled per second by :meth:`MPNNPolicy.sample` (cached encoder, per-step gathers)
  against ``ProteinMPNN.sample`` of the ``proteinmpnn`` package at the same batch and temperature;
- RL gradient steps per second (re-score n samples under their orders with the last decoder layer
  trainable, plus the KL reference) against ``ProteinMPNN.forward`` + backward with the same
  layers trainable, the direct way to get the same log-probabilities;
- the max@N weights of n rewards (sort, two cumulative sums) for large n.
Timings run on BPTI (5pti) when mdanalysistests is installed, otherwise on an ideal helix built
here; the CPU runs with one thread so the ratios are stable; CUDA timings synchronise the device.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import torch

from icml26.testing.checks import integer
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device
from icml26.testing.timing import best_time, torch_threads


@dataclass(frozen=True)
class BenchConfig(DeviceOption):
    """Throughput ratios of the policy's sampler and RL step against ProteinMPNN's own code."""

    n: int = 32
    """Sequences per batch."""
    length: int = 64
    """Residues of the built helix when no example backbone is installed."""
    repeats: int = 3
    """Best of this many timings."""


def run_bench(cfg: BenchConfig) -> dict:
    """Measure, print and return the ratios (JSON)."""
    integer("--n", cfg.n, low=2)
    integer("--repeats", cfg.repeats, low=1)
    integer("--length", cfg.length, low=4)
    device = resolve_device(cfg.device)
    with torch_threads(1, device):  # stable ratios on a shared CPU
        return _measure(cfg, device)


def _measure(cfg: BenchConfig, device: str) -> dict:
    from icml26.fidia.data import examples_dir, ideal_helix
    from icml26.fidia.estimators import maxn_weights
    from icml26.fidia.policy import MPNNPolicy

    if examples_dir() is not None:
        from icml26.fidia.data import example_backbone

        bb = example_backbone("5pti")
    else:
        bb = ideal_helix(cfg.length)
    policy = MPNNPolicy.from_package().to(device)
    m = policy.mpnn
    L, n = len(bb), cfg.n
    X = bb.X[None].expand(n, -1, -1, -1).to(device)
    ones = torch.ones(n, L, device=device)
    ridx = bb.residue_idx[None].expand(n, -1).to(device)
    chains = bb.chain_encoding[None].expand(n, -1).to(device)
    S = bb.native[None].expand(n, -1).to(device)
    omit = np.zeros(21, dtype=np.float32)
    omit[20] = 1.0

    def theirs_sample():
        with torch.no_grad():
            m.sample(X, torch.randn(n, L, device=device), S, ones, chains, ridx, mask=ones,
                     temperature=0.3, omit_AAs_np=omit, bias_AAs_np=np.zeros(21, np.float32),
                     chain_M_pos=ones,
                     bias_by_res=torch.zeros(n, L, 21, device=device))  # fmt: skip

    def ours_sample():
        policy._cache.clear()  # count the encoder, as ProteinMPNN.sample does
        policy.sample(bb, n, 0.3)

    s = policy.sample(bb, n, 0.3)

    def ours_step():
        policy.zero_grad()
        out = policy.score(bb, s.seqs, s.orders, 0.3)
        (-(out.log_probs.mean()) + 0.01 * out.kl.mean()).backward()

    def theirs_step():
        # ProteinMPNN's own forward with the same layers trainable: it re-encodes the backbone
        # and runs every decoder layer on every call
        m.zero_grad()
        lp = m(X, s.seqs, ones, ones, ridx, chains, None, use_input_decoding_order=True,
               decoding_order=s.orders)  # fmt: skip
        (-lp.gather(-1, s.seqs[..., None]).sum((1, 2)).mean()).backward()

    rewards = torch.randn(8, 4096, dtype=torch.float64)
    t = {
        "sample_ours": best_time(ours_sample, cfg.repeats, device),
        "sample_proteinmpnn": best_time(theirs_sample, cfg.repeats, device),
        "step_ours": best_time(ours_step, cfg.repeats, device),
        "step_proteinmpnn_forward": best_time(theirs_step, cfg.repeats, device),
        "maxn_weights_8x4096": best_time(lambda: maxn_weights(rewards, 64), cfg.repeats, "cpu"),
    }
    report = {
        "device": device,
        "backbone": bb.name,
        "length": L,
        "n": n,
        "sequences_per_s": round(n / t["sample_ours"], 1),
        "sample_speedup_vs_proteinmpnn": round(t["sample_proteinmpnn"] / t["sample_ours"], 2),
        "gradient_steps_per_s": round(1 / t["step_ours"], 2),
        "step_speedup_vs_proteinmpnn_forward": round(
            t["step_proteinmpnn_forward"] / t["step_ours"], 2
        ),
        "maxn_weights_ms_8x4096": round(1000 * t["maxn_weights_8x4096"], 2),
        "seconds": {k: round(v, 4) for k, v in t.items()},
    }
    print(json.dumps(report, indent=2))
    return report
