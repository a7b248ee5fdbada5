"""``icml26-rerooter bound``: √LTS's expansion bound against the expansions it actually took.

Every solved √LTS search records the terms of its bound along the solution (``SearchResult.bound``,
the quantities the authors' search logs): ``W``, the sum of the weights of all expanded nodes,
and the most expensive segment between rerooting points on the solution path. This command
searches bundled Boxoban test levels with each rerooter (a uniform policy and the hand-written
heuristic, no training), and plots ``log_bound_simplified`` and ``log_bound_trivial`` against
log expansions on the solved ones: points must lie above the diagonal, and the gap shows how
loose each form is.
"""

import json
import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from icml26.rerooter.evaluators import UniformPolicy
from icml26.rerooter.rerooters import ClusterRerooter, HeuristicRerooter, MixedRerooter
from icml26.rerooter.search import sqrt_lts
from icml26.rerooter.sokoban import bundled_levels

REROOTERS = {"√LTS-H": HeuristicRerooter, "√LTS-L": ClusterRerooter, "√LTS-LH": MixedRerooter}


@dataclass(frozen=True)
class BoundConfig:
    """The √LTS bound against actual expansions on solved test levels."""

    levels: int = 50
    """Bundled test levels searched by every rerooter."""
    budget: int = 20000
    """Expansion budget per search."""
    out: Path = Path("runs/rerooter/bound")
    """Folder for bound.json and bound.png."""


def measure_bound(levels: int, budget: int, progress: bool = True) -> dict[str, list[dict]]:
    """{rerooter: [{level, expansions, log_bound_simplified, log_bound_trivial, W}, ...]}."""
    if not 1 <= levels <= 1000 or budget < 1:
        raise ValueError(f"need 1 <= levels <= 1000 and budget >= 1, got {levels}, {budget}")
    envs = bundled_levels("test")[:levels]
    guide = UniformPolicy(heuristic=True)
    out: dict[str, list[dict]] = {}
    for name, make in REROOTERS.items():
        rows = []
        for i, env in enumerate(tqdm(envs, desc=name, disable=not progress)):
            r = sqrt_lts(env, guide, make(), budget)
            if r.solved:
                rows.append({"level": i, "expansions": r.expansions, **r.bound})
        out[name] = rows
    return out


def run_bound(cfg: BoundConfig) -> dict[str, list[dict]]:
    rows = measure_bound(cfg.levels, cfg.budget)
    cfg.out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cfg.out, prefix=".bound.json.")
    with os.fdopen(fd, "w") as f:
        json.dump({"levels": cfg.levels, "budget": cfg.budget, "solved": rows}, f, indent=2)
    os.replace(tmp, cfg.out / "bound.json")
    _plot(rows, cfg.out / "bound.png")
    print(f"{'rerooter':10s} {'solved':>6s} {'above (simplified)':>19s} {'median gap (nats)':>18s}")
    for name, rs in rows.items():
        above = sum(math.log(r["expansions"]) <= r["log_bound_simplified"] for r in rs)
        gaps = sorted(r["log_bound_simplified"] - math.log(r["expansions"]) for r in rs)
        med = f"{gaps[len(gaps) // 2]:.2f}" if gaps else "-"
        print(f"{name:10s} {len(rs):>6d} {f'{above}/{len(rs)}':>19s} {med:>18s}")
    print(f"-> {cfg.out / 'bound.png'}")
    return rows


def _plot(rows: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), layout="constrained")
    for ax, key in zip(axes, ("log_bound_simplified", "log_bound_trivial"), strict=True):
        lo, hi = math.inf, -math.inf
        for i, (name, rs) in enumerate(rows.items()):
            xs = [math.log(r["expansions"]) for r in rs]
            ys = [r[key] for r in rs]
            ax.scatter(xs, ys, s=14, color=f"C{i}", label=f"{name} ({len(rs)} solved)")
            lo, hi = min([lo, *xs]), max([hi, *ys])
        if math.isfinite(lo):
            ax.plot([lo, hi], [lo, hi], color="k", lw=0.8, ls="--", label="bound = expansions")
        ax.set_xlabel("log expansions")
        ax.set_ylabel(key.replace("_", " "))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("√LTS: the expansion bound's terms on solved levels (above the diagonal = holds)")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".png")
    os.close(fd)
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
