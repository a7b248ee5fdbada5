"""Command line: ``icml26-fidia demo [--quick]``, ``train``, ``evaluate``, ``design``, ``bench``
(also ``python -m icml26.fidia``). ``train`` runs unchanged under ``torchrun`` (backbones are split
across ranks)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from icml26.fidia.bench import BenchConfig, run_bench
from icml26.fidia.demo import run_demo
from icml26.fidia.study import DemoConfig
from icml26.testing.command import DeviceOption, dispatch


@dataclass(frozen=True)
class TaskSpec(DeviceOption):
    """Which backbones to design for, and their constraints."""

    backbones: tuple[str, ...] = ()
    """Example backbones (5pti, cobrotoxin; need mdanalysistests) with the demo's motifs
    (default: 5pti, unless --structure is given)."""
    structure: Path | None = None
    """Your own structure (PDB / mmCIF, .gz ok), designed instead of the examples."""
    chain: str | None = None
    """Chain of --structure (default: every amino-acid chain)."""
    fixed: tuple[int, ...] = ()
    """Residue numbers of --structure that keep their native residue (the motif)."""
    disulfides: bool = True
    """Require cysteines at the native disulfides of --structure and forbid other cysteines."""

    def tasks(self, device: str):
        from icml26.fidia.reward import CompositeReward
        from icml26.fidia.study import example_task
        from icml26.fidia.train import Task

        if self.structure is None:
            if self.fixed:
                raise ValueError("--fixed names residues of --structure; give --structure too")
            return [example_task(b, device) for b in self.backbones or ("5pti",)]
        if self.backbones:
            raise ValueError("give either --backbones (examples) or --structure, not both")
        from icml26.fidia.data import load_backbone

        bb = load_backbone(self.structure, self.chain)
        fixed = tuple(bb.index(r) for r in self.fixed)
        required = ({i: "C" for pair in bb.disulfides for i in pair if i not in fixed}
                    if self.disulfides else {})  # fmt: skip
        reward = CompositeReward(bb, fixed=fixed, required=required,
                                 forbidden="C" if self.disulfides else "",
                                 device=device)  # fmt: skip
        return [Task(bb, reward, fixed)]


@dataclass(frozen=True)
class TrainCli(TaskSpec):
    """Fine-tune ProteinMPNN with FIDIA (or a baseline objective) and save the trained layers."""

    out: Path = Path("runs/fidia/train")
    """Checkpoint folder (policy.safetensors, config.json, training state)."""
    objective: Literal["maxn", "passn", "grpo", "mean"] = "maxn"
    N: int = 8
    n: int = 32
    steps: int = 20
    lr: float = 1e-3
    beta: float = 0.01
    temperature: float = 0.3
    trainable_layers: int = 1
    seed: int = 0
    resume: bool = False
    """Continue from the training state in --out."""


@dataclass(frozen=True)
class EvaluateCli(TaskSpec):
    """Sample fresh designs and report success@N, precision, reward, diversity, recovery."""

    checkpoint: Path | None = None
    """Folder written by ``train`` (default: the released ProteinMPNN)."""
    samples: int = 128
    N: int = 8
    temperature: float | None = None
    """Sampling temperature (default: the checkpoint's training temperature, else 0.3)."""
    seed: int = 0


@dataclass(frozen=True)
class DesignCli(TaskSpec):
    """Draw N designs per backbone, keep the best, write them as FASTA with their reward terms."""

    checkpoint: Path | None = None
    """Folder written by ``train`` (default: the released ProteinMPNN)."""
    N: int = 8
    """Designs per backbone."""
    temperature: float | None = None
    """Sampling temperature (default: the checkpoint's training temperature, else 0.3)."""
    seed: int = 0
    fasta: Path | None = None
    """Write every design here (default: print only)."""


def _policy(checkpoint: Path | None, device: str, trainable_layers: int = 1):
    from icml26.fidia.policy import MPNNPolicy

    if checkpoint is None:
        return MPNNPolicy.from_package(trainable_layers=trainable_layers).to(device)
    return MPNNPolicy.from_pretrained(checkpoint).to(device)


def _temperature(flag: float | None, policy) -> float:
    T = flag if flag is not None else float(policy.meta.get("temperature", 0.3))
    if not T > 0:
        raise ValueError(f"--temperature must be > 0, got {T}")
    return T


def run_train(cfg: TrainCli) -> Path:
    import torch.distributed as dist

    from icml26.fidia.train import TrainConfig, train
    from icml26.testing.results import resolve_device

    device = resolve_device(cfg.device)
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        if device.startswith("cuda"):
            device = f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}"
    tcfg = TrainConfig(objective=cfg.objective, N=cfg.N, n=cfg.n, steps=cfg.steps, lr=cfg.lr,
                       beta=cfg.beta, temperature=cfg.temperature, seed=cfg.seed,
                       progress=True)  # fmt: skip
    tcfg.check()
    tasks = cfg.tasks(device)
    policy = _policy(None, device, cfg.trainable_layers)
    result = train(policy, tasks, tcfg, checkpoint_dir=cfg.out / "state", resume=cfg.resume)
    rank = dist.get_rank() if dist.is_initialized() else 0
    if rank == 0:
        policy.meta.update(objective=cfg.objective, N=cfg.N, temperature=cfg.temperature,
                           steps=len(result.history))  # fmt: skip
        policy.save_pretrained(cfg.out)
        last = result.history[-1] if result.history else {}
        print(
            f"saved to {cfg.out}: {len(result.history)} steps; last step reward "
            f"{last.get('reward', 0.0):.3f}, success {last.get('success', 0.0):.2f}"
        )
    return cfg.out


def run_evaluate(cfg: EvaluateCli) -> dict:
    import torch

    from icml26.fidia.study import evaluate_samples
    from icml26.testing.results import resolve_device

    if cfg.samples < cfg.N:
        raise ValueError(f"--samples must be >= --N, got {cfg.samples} < {cfg.N}")
    device = resolve_device(cfg.device)
    policy = _policy(cfg.checkpoint, device)
    T = _temperature(cfg.temperature, policy)
    g = torch.Generator().manual_seed(cfg.seed)
    report = {}
    for task in cfg.tasks(device):
        s = policy.sample(task.backbone, cfg.samples, T, task.fixed, g)
        report[task.backbone.name] = evaluate_samples(task, s.seqs.cpu(), cfg.N)
    print(json.dumps(report, indent=2))
    return report


def run_design(cfg: DesignCli) -> list[dict]:
    import torch

    from icml26.fidia.data import decode
    from icml26.testing.results import resolve_device

    if cfg.N < 1:
        raise ValueError(f"--N must be >= 1, got {cfg.N}")
    device = resolve_device(cfg.device)
    policy = _policy(cfg.checkpoint, device)
    T = _temperature(cfg.temperature, policy)
    g = torch.Generator().manual_seed(cfg.seed)
    designs = []
    for task in cfg.tasks(device):
        s = policy.sample(task.backbone, cfg.N, T, task.fixed, g)
        out = task.reward(s.seqs.cpu())
        for i in range(cfg.N):
            designs.append({"backbone": task.backbone.name, "sequence": decode(s.seqs[i]),
                            "reward": float(out.reward[i]), "success": bool(out.success[i]),
                            "designability_proxy":
                                float(out.terms["designability"][i])})  # fmt: skip
        best = max((d for d in designs if d["backbone"] == task.backbone.name),
                   key=lambda d: d["reward"])  # fmt: skip
        print(f"{task.backbone.name}: best of {cfg.N}: reward {best['reward']:.3f}, "
              f"success {best['success']}\n{best['sequence']}")  # fmt: skip
    if cfg.fasta is not None:
        text = "".join(f">{d['backbone']}_{i} reward={d['reward']:.4f} success={d['success']}\n"
                       f"{d['sequence']}\n" for i, d in enumerate(designs))  # fmt: skip
        cfg.fasta.parent.mkdir(parents=True, exist_ok=True)
        tmp = cfg.fasta.with_suffix(cfg.fasta.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(cfg.fasta)
    return designs


DESCRIPTION = "FIDIA: best-of-N aligned RL for inverse folding with ProteinMPNN."
COMMANDS = {
    "demo": (DemoConfig, run_demo),
    "train": (TrainCli, run_train),
    "evaluate": (EvaluateCli, run_evaluate),
    "design": (DesignCli, run_design),
    "bench": (BenchConfig, run_bench),
}


def main(argv: list[str] | None = None) -> int:
    return dispatch("icml26-fidia", DESCRIPTION, COMMANDS, argv)
