"""One trainer for every learner, in PyMARL's episode-replay form.

Each iteration plays ``num_envs`` episodes in a vectorised environment (epsilon-greedy, epsilon
annealed linearly), stores them whole in an episode replay buffer, and takes
``updates_per_rollout`` RMSprop steps on batches of episodes with the TD(lambda) loss of the joint
value against a target network copied every ``target_every`` episodes (PyMARL's settings:
RMSprop, lr 5e-4, gradient clip 10, target every 200 episodes). The default target is one-step
(lambda = 0, as DCG and CASEC train): PyMARL2's TD(lambda = 0.6) mixes in the epsilon-greedy
behaviour's own returns, and with them DCG did not leave the idle policy of the
shifting-dependency game within 40k steps.

For the class-conditioned learners the first ``pretrain_frac`` of the environment steps are the
abstraction phase: the learner acts with uniform class probabilities; then the trajectory VQ-VAE
and k-means label every stored step, the class predictor is fitted to those labels and frozen,
and RL goes on conditioned on its output.

Checkpoints (``checkpoint=DIR``): safetensors with the networks, optimiser, replay buffer and
torch RNG, and a JSON file with counters and numpy RNG states, written atomically after every
iteration that crosses ``save_every`` steps; ``resume=True`` continues exactly where the run
stopped (``stop_at`` stops a run early, for that purpose). Under ``torchrun`` every rank plays its
own environments, gradients are averaged across ranks (an all-reduce, as DDP does), and rank 0
fits the abstraction and broadcasts the predictor.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm.auto import tqdm

from icml26.tactic.abstraction import ClassPredictor, fit_classes, train_predictor
from icml26.tactic.learner import Learner, LearnerConfig, flat_steps
from icml26.testing.command import DeviceOption
from icml26.testing.results import resolve_device

__all__ = [
    "EpisodeBuffer",
    "TrainConfig",
    "TrainResult",
    "evaluate",
    "evaluate_checkpoint",
    "train",
]


@dataclass(frozen=True)
class TrainConfig(DeviceOption):
    """Trainer settings (PyMARL conventions; steps count environment steps over all envs)."""

    steps: int = 40_000
    num_envs: int = 8
    updates_per_rollout: int = 4
    batch: int = 32
    """Episodes per update."""
    buffer: int = 2000
    """Episodes kept."""
    lr: float = 5e-4
    gamma: float = 0.99
    td_lambda: float = 0.0
    """lambda of the TD(lambda) target; 0 is the one-step double-Q target of DCG and CASEC."""
    grad_clip: float = 10.0
    eps_start: float = 1.0
    eps_end: float = 0.05
    eps_anneal_frac: float = 0.3
    """Share of ``steps`` over which epsilon falls linearly."""
    target_every: int = 200
    """Episodes between target-network copies."""
    pretrain_frac: float = 0.1
    """Share of ``steps`` played before the abstraction is fitted (class-conditioned learners)."""
    n_classes: int = 3
    """K, the number of task classes k-means makes."""
    vq_steps: int = 600
    predictor_steps: int = 400
    eval_every: int = 4000
    eval_episodes: int = 64
    final_eval_episodes: int = 256
    save_every: int = 10_000
    seed: int = 0

    def check(self) -> None:
        for name in ("steps", "num_envs", "updates_per_rollout", "batch", "buffer", "eval_every",
                     "eval_episodes", "final_eval_episodes", "save_every"):  # fmt: skip
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if not 0 < self.gamma <= 1:
            raise ValueError(f"gamma must be in (0, 1], got {self.gamma}")
        if not 0 <= self.td_lambda <= 1:
            raise ValueError(f"td_lambda must be in [0, 1], got {self.td_lambda}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if not (0 <= self.eps_end <= self.eps_start <= 1 and 0 < self.eps_anneal_frac <= 1):
            raise ValueError("0 <= eps_end <= eps_start <= 1 and 0 < eps_anneal_frac <= 1 needed")
        if not 0 < self.pretrain_frac < 1:
            raise ValueError(f"pretrain_frac must be in (0, 1), got {self.pretrain_frac}")
        if self.n_classes < 2:
            raise ValueError(f"n_classes must be >= 2, got {self.n_classes}")


class EpisodeBuffer:
    """Whole episodes of fixed length T in circular numpy arrays."""

    FIELDS = ("obs", "state", "avail", "actions", "reward", "task")

    def __init__(self, capacity: int, T: int, n: int, obs_dim: int, state_dim: int, A: int):
        sizes = {"capacity": capacity, "T": T, "n": n, "obs_dim": obs_dim,
                 "state_dim": state_dim, "A": A}  # fmt: skip
        bad = {k: v for k, v in sizes.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise ValueError(f"EpisodeBuffer sizes must be positive integers, got {bad}")
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.obs = np.zeros((capacity, T + 1, n, obs_dim), np.float32)
        self.state = np.zeros((capacity, T + 1, state_dim), np.float32)
        self.avail = np.zeros((capacity, T + 1, n, A), bool)
        self.actions = np.zeros((capacity, T, n), np.int64)
        self.reward = np.zeros((capacity, T), np.float32)
        self.task = np.full((capacity, T), -1, np.int64)

    def add(self, ep: dict[str, np.ndarray]) -> None:
        B = ep["actions"].shape[0]
        idx = (self.pos + np.arange(B)) % self.capacity
        for k in self.FIELDS:
            getattr(self, k)[idx] = ep[k]
        self.pos = int((self.pos + B) % self.capacity)
        self.size = int(min(self.capacity, self.size + B))

    def sample(self, batch: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
        idx = rng.integers(0, self.size, min(batch, self.size))
        return {k: getattr(self, k)[idx] for k in self.FIELDS}

    def all(self) -> dict[str, np.ndarray]:
        return {k: getattr(self, k)[: self.size] for k in self.FIELDS}


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    learner: Learner
    predictor: ClassPredictor | None
    curve: list[dict[str, float]]
    """Test metrics (greedy) every ``eval_every`` steps."""
    final: dict[str, Any]
    """Test metrics of ``final_eval_episodes`` greedy episodes (and edge counts per task)."""
    abstraction: dict[str, float] = field(default_factory=dict)
    """Class ARI against the hidden task types, predictor accuracy, codes used."""
    steps: int = 0
    updates: int = 0
    seconds: float = 0.0
    stopped: bool = False
    """True when ``stop_at`` ended the run before ``steps``."""


def agent_inputs(obs: torch.Tensor, actions: torch.Tensor, A: int) -> torch.Tensor:
    """PyMARL's agent input: observation, agent id one-hot, last action one-hot (zeros at t = 0).
    obs (B, T1, n, o), actions (B, T, n) with T1 in {T, T + 1} -> (B, T1, n, o + n + A)."""
    B, T1, n, _ = obs.shape
    last = torch.zeros(B, T1, n, A, device=obs.device)
    if T1 > 1:
        last[:, 1:] = F.one_hot(actions[:, : T1 - 1], A).float()
    ids = torch.eye(n, device=obs.device).expand(B, T1, n, n)
    return torch.cat([obs, ids, last], -1)


def _world() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


class _Run:
    """Everything a run carries between iterations (and into a checkpoint)."""

    def __init__(self, make_env: Callable, lcfg: LearnerConfig, cfg: TrainConfig):
        cfg.check()
        lcfg.check()
        self.cfg, self.lcfg, self.make_env = cfg, lcfg, make_env
        self.rank, self.world = _world()
        self.env = make_env(cfg.num_envs, cfg.seed + 1000 * self.rank)
        env = self.env
        self.n, self.A, self.T = env.n_agents, env.n_actions, env.episode_limit
        in_dim = env.obs_dim + self.n + self.A
        torch.manual_seed(cfg.seed)  # identical initial weights on every rank
        dev = torch.device(resolve_device(cfg.device))
        self.dev = dev
        K = cfg.n_classes
        self.learner = Learner(lcfg, self.n, self.A, in_dim, env.state_dim, K).to(dev)
        self.target = copy.deepcopy(self.learner).requires_grad_(False)
        self.predictor = (ClassPredictor(env.obs_dim, self.n, K).to(dev)
                          if lcfg.classes else None)  # fmt: skip
        self.predictor_ready = False
        self.opt = torch.optim.RMSprop(self.learner.parameters(), lr=cfg.lr, alpha=0.99, eps=1e-5)
        self.buffer = EpisodeBuffer(cfg.buffer, self.T, self.n, env.obs_dim, env.state_dim, self.A)
        self.rng = np.random.default_rng([cfg.seed, self.rank, 1])
        self.gen = torch.Generator().manual_seed(cfg.seed * 7919 + self.rank)
        self.steps = self.episodes = self.updates = self.last_target = 0
        self.curve: list[dict[str, float]] = []
        self.abstraction: dict[str, float] = {}
        self.next_eval = cfg.eval_every

    # -- acting ----------------------------------------------------------------------------------
    def epsilon(self) -> float:
        c = self.cfg
        frac = min(1.0, self.steps / (c.eps_anneal_frac * c.steps))
        return c.eps_start + frac * (c.eps_end - c.eps_start)

    def class_probs(self, obs: torch.Tensor, grad: bool = False) -> torch.Tensor | None:
        """Predictor probabilities (B, T, n, K) for obs (B, T, n, o); uniform before the
        abstraction is fitted; None for learners without classes."""
        if self.predictor is None:
            return None
        if not self.predictor_ready:
            return torch.full((*obs.shape[:3], self.cfg.n_classes), 1 / self.cfg.n_classes,
                              device=obs.device)  # fmt: skip
        with torch.set_grad_enabled(grad):
            return F.softmax(self.predictor(obs), -1)

    def play(self, env, eps: float, rng: np.random.Generator, edge_counts: np.ndarray | None = None
             ) -> tuple[dict[str, np.ndarray], dict[str, float]]:  # fmt: skip
        """One batch of episodes (all of ``env``'s environments) with epsilon-greedy actions."""
        return play_episodes(env, self.learner, self.predictor if self.predictor_ready else None,
                             self.cfg.n_classes, eps, rng, self.gen, self.dev,
                             edge_counts)  # fmt: skip

    # -- learning --------------------------------------------------------------------------------
    def learn(self) -> float:
        c = self.cfg
        b = {k: torch.as_tensor(v, device=self.dev)
             for k, v in self.buffer.sample(c.batch, self.rng).items()}  # fmt: skip
        B, T = b["actions"].shape[:2]
        inputs = agent_inputs(b["obs"], b["actions"], self.A)
        grad_pred = self.predictor is not None and not self.lcfg.freeze_predictor
        probs = self.class_probs(b["obs"], grad=grad_pred and self.predictor_ready)
        out = self.learner(inputs, probs)
        chosen = self.learner.q_tot(flat_steps(out, slice(0, T)), b["actions"].flatten(0, 1),
                                    b["state"][:, :T].flatten(0, 1)).view(B, T)  # fmt: skip
        with torch.no_grad():
            tprobs = None if probs is None else probs.detach()
            tout = self.target(inputs, tprobs)
            nxt = flat_steps(out, slice(1, T + 1))
            nxt = type(nxt)(*(None if x is None else x.detach() for x in nxt))
            a_next, _ = self.learner.greedy(nxt, b["avail"][:, 1:].flatten(0, 1), self.gen)
            q_next = self.target.q_tot(flat_steps(tout, slice(1, T + 1)), a_next,
                                       b["state"][:, 1:].flatten(0, 1)).view(B, T)  # fmt: skip
            # TD(lambda) returns; every episode ends at T (fixed horizon, time in the input)
            ret = torch.zeros_like(q_next)
            g = b["reward"][:, T - 1]
            ret[:, T - 1] = g
            for t in range(T - 2, -1, -1):
                g = b["reward"][:, t] + c.gamma * ((1 - c.td_lambda) * q_next[:, t]
                                                   + c.td_lambda * g)  # fmt: skip
                ret[:, t] = g
        loss = F.mse_loss(chosen, ret)
        self.opt.zero_grad()
        loss.backward()
        params = [p for g in self.opt.param_groups for p in g["params"]]
        if self.world > 1:  # average gradients over ranks, as DDP does
            for p in params:
                if p.grad is None:
                    p.grad = torch.zeros_like(p)
                dist.all_reduce(p.grad)
                p.grad /= self.world
        torch.nn.utils.clip_grad_norm_(params, c.grad_clip)
        self.opt.step()
        self.updates += 1
        return float(loss.detach())

    def fit_abstraction(self) -> None:
        """Label stored steps (VQ-VAE + k-means), fit the predictor, freeze it (rank 0; the
        predictor is then broadcast)."""
        c = self.cfg
        if self.rank == 0:
            data = self.buffer.all()
            T = self.T
            obs = torch.as_tensor(data["obs"][:, :T])
            # joint observations, not the state: the game's state holds the hidden type itself
            fit = fit_classes(obs.flatten(2), c.n_classes, steps=c.vq_steps, seed=c.seed)
            self.predictor.cpu()
            acc = train_predictor(self.predictor, obs, torch.as_tensor(fit.labels),
                                  steps=c.predictor_steps, seed=c.seed)  # fmt: skip
            self.predictor.to(self.dev)
            self.abstraction = {"predictor_acc": acc["test_acc"],
                                "predictor_majority": acc["majority"],
                                "codes_used": fit.codes_used,
                                "vq_recon": fit.recon,
                                "labelled_steps": int(fit.labels.size)}  # fmt: skip
            task = data["task"]
            if (task >= 0).all():
                from sklearn.metrics import adjusted_rand_score

                self.abstraction["class_ari"] = float(
                    adjusted_rand_score(task.ravel(), fit.labels.ravel())
                )
        if self.world > 1:
            for t in self.predictor.state_dict().values():
                dist.broadcast(t, 0)
            box = [self.abstraction]
            dist.broadcast_object_list(box, 0)
            self.abstraction = box[0]
        if self.lcfg.freeze_predictor:
            self.predictor.freeze()
        else:
            self.opt.add_param_group({"params": list(self.predictor.parameters())})
        self.predictor_ready = True

    # -- the loop --------------------------------------------------------------------------------
    def iterate(self) -> None:
        c = self.cfg
        ep, _ = self.play(self.env, self.epsilon(), self.rng)
        self.buffer.add(ep)
        B = ep["actions"].shape[0]
        self.steps += B * self.T * self.world
        self.episodes += B * self.world  # global, so target copies keep their spacing
        if (self.predictor is not None and not self.predictor_ready
                and self.steps >= c.pretrain_frac * c.steps):  # fmt: skip
            self.fit_abstraction()
        if self.buffer.size >= min(c.batch, c.buffer):
            for _ in range(c.updates_per_rollout):
                self.learn()
        if self.episodes - self.last_target >= c.target_every:
            self.target.load_state_dict(self.learner.state_dict())
            self.last_target = self.episodes
        if self.steps >= self.next_eval or self.steps >= c.steps:
            m = evaluate(self, c.eval_episodes, seed=c.seed + 10**6)
            self.curve.append({"steps": self.steps, **{k: v for k, v in m.items()
                                                       if isinstance(v, float)}})  # fmt: skip
            while self.next_eval <= self.steps:
                self.next_eval += c.eval_every

    # -- checkpoints -----------------------------------------------------------------------------
    def save(self, path: Path) -> None:
        from safetensors.torch import save_file

        if self.world > 1:  # every rank keeps its own buffer and random streams
            path = path / f"rank{self.rank}"
        path.mkdir(parents=True, exist_ok=True)
        tensors = {f"learner.{k}": v for k, v in self.learner.state_dict().items()}
        tensors |= {f"target.{k}": v for k, v in self.target.state_dict().items()}
        if self.predictor is not None:
            tensors |= {f"predictor.{k}": v for k, v in self.predictor.state_dict().items()}
        opt = self.opt.state_dict()
        for pid, st in opt["state"].items():
            for k, v in st.items():
                tensors[f"opt.{pid}.{k}"] = torch.as_tensor(v)
        for k in EpisodeBuffer.FIELDS:
            tensors[f"buffer.{k}"] = torch.from_numpy(np.ascontiguousarray(getattr(self.buffer, k)))
        tensors["rng.torch"] = self.gen.get_state()
        tensors = {k: v.detach().cpu().contiguous() for k, v in tensors.items()}
        meta = {"steps": self.steps, "episodes": self.episodes, "updates": self.updates,
                "last_target": self.last_target, "next_eval": self.next_eval,
                "predictor_ready": self.predictor_ready, "buffer_size": self.buffer.size,
                "buffer_pos": self.buffer.pos, "curve": self.curve,
                "abstraction": self.abstraction,
                "rng": self.rng.bit_generator.state, "env_rng": self.env.rng.bit_generator.state,
                "opt_groups": [{k: v for k, v in g.items() if k != "params"}
                               for g in opt["param_groups"]],
                "train": asdict(self.cfg), "learner": asdict(self.lcfg)}  # fmt: skip
        tmp = path / "state.safetensors.partial"
        save_file(tensors, str(tmp))
        os.replace(tmp, path / "state.safetensors")
        tmpj = path / "state.json.partial"
        tmpj.write_text(json.dumps(meta))
        os.replace(tmpj, path / "state.json")

    def load(self, path: Path) -> None:
        from safetensors.torch import load_file

        if self.world > 1:
            path = path / f"rank{self.rank}"
        if not (path / "state.json").is_file() or not (path / "state.safetensors").is_file():
            raise FileNotFoundError(f"no checkpoint in {path} (state.json / state.safetensors)")
        meta = json.loads((path / "state.json").read_text())
        if meta["learner"] != asdict(self.lcfg):
            raise ValueError(f"the checkpoint in {path} is of another learner: {meta['learner']}")
        tensors = load_file(str(path / "state.safetensors"))

        def part(prefix):
            return {k[len(prefix) :]: v for k, v in tensors.items() if k.startswith(prefix)}

        self.learner.load_state_dict(part("learner."))
        self.target.load_state_dict(part("target."))
        if self.predictor is not None:
            self.predictor.load_state_dict(part("predictor."))
            if meta["predictor_ready"]:
                if self.lcfg.freeze_predictor:
                    self.predictor.freeze()
                else:
                    self.opt.add_param_group({"params": list(self.predictor.parameters())})
        self.predictor_ready = meta["predictor_ready"]
        state: dict[int, dict] = {}
        for k, v in part("opt.").items():
            pid, name = k.split(".", 1)
            state.setdefault(int(pid), {})[name] = v.to(self.dev) if name != "step" else v
        groups = self.opt.state_dict()["param_groups"]
        for g, saved in zip(groups, meta["opt_groups"], strict=True):
            g.update({k: v for k, v in saved.items()})
        self.opt.load_state_dict({"state": state, "param_groups": groups})
        for k in EpisodeBuffer.FIELDS:
            getattr(self.buffer, k)[...] = tensors[f"buffer.{k}"].numpy()
        self.buffer.size, self.buffer.pos = meta["buffer_size"], meta["buffer_pos"]
        self.gen.set_state(tensors["rng.torch"])
        self.rng.bit_generator.state = meta["rng"]
        self.env.rng.bit_generator.state = meta["env_rng"]
        for k in ("steps", "episodes", "updates", "last_target", "next_eval"):
            setattr(self, k, meta[k])
        self.curve, self.abstraction = meta["curve"], meta["abstraction"]


def play_episodes(
    env, learner: Learner, predictor: ClassPredictor | None, n_classes: int, eps: float,
    rng: np.random.Generator, gen: torch.Generator, device, edge_counts: np.ndarray | None = None,
) -> tuple[dict[str, np.ndarray], dict[str, float]]:  # fmt: skip
    """Play one episode in each of ``env``'s environments: (episode arrays, test metrics).
    ``edge_counts`` (tasks, E), when given, accumulates how often each edge is kept per task."""
    s = env.reset()
    B, n, A, T = env.num_envs, env.n_agents, env.n_actions, env.episode_limit
    ep = {"obs": [s.obs], "state": [s.state], "avail": [s.avail], "actions": [], "reward": [],
          "task": []}  # fmt: skip
    infos, rewards = [], []
    h = learner.init_hidden(B)
    hp = predictor.init_hidden(B) if predictor is not None else None
    last = np.zeros((B, n), np.int64)
    with torch.no_grad():
        for t in range(T):
            obs = torch.as_tensor(s.obs, device=device)
            inp = agent_inputs(obs.unsqueeze(1), torch.as_tensor(last, device=device)[:, None],
                               A)[:, 0]  # fmt: skip
            if t > 0:
                inp[:, :, -A:] = F.one_hot(torch.as_tensor(last, device=device), A).float()
            probs = None
            if learner.cfg.classes:
                if predictor is not None:
                    logits, hp = predictor.step(obs, hp)
                    probs = F.softmax(logits, -1)
                else:
                    probs = torch.full((B, n, n_classes), 1 / n_classes, device=device)
            out, h = learner.step(inp, h, probs)
            avail = torch.as_tensor(s.avail, device=device)
            act, mask = learner.greedy(out, avail, gen)
            act = act.cpu().numpy()
            if eps > 0:
                explore = rng.random((B, n)) < eps
                rand = _random_available(s.avail, rng)
                act = np.where(explore, rand, act)
            s2 = env.step(act)
            if edge_counts is not None and mask is not None and "task" in s2.info:
                np.add.at(edge_counts, s2.info["task"], mask.cpu().numpy().astype(np.int64))
            ep["actions"].append(act)
            ep["reward"].append(s2.reward)
            ep["task"].append(s2.info.get("task", np.full(B, -1)))
            ep["obs"].append(s2.obs)
            ep["state"].append(s2.state)
            ep["avail"].append(s2.avail)
            infos.append(s2.info)
            rewards.append(s2.reward)
            last, s = act, s2
    arrays = {k: np.stack(v, 1) for k, v in ep.items()}
    return arrays, env.episode_metrics(infos, rewards)


def _random_available(avail: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random available action per agent: avail (B, n, A) -> (B, n)."""
    w = avail * rng.random(avail.shape)
    return w.argmax(-1)


def evaluate(run: _Run, episodes: int, seed: int) -> dict[str, Any]:
    """Greedy test episodes on fresh environments (seeded apart from training)."""
    if not isinstance(run, _Run):
        raise TypeError(f"run must be a training run (what train builds), got {type(run).__name__}")
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int, got {episodes!r}")
    cap = getattr(run.env, "max_envs", None) or episodes
    edge_counts = None
    if run.lcfg.kind == "graph" and getattr(run.env, "n_classes_true", None):
        edge_counts = np.zeros((run.env.n_classes_true, run.learner.edges.shape[0]), np.int64)
    metrics: list[dict[str, float]] = []
    gen = torch.Generator().manual_seed(seed)  # random pruning in tests: not the training stream
    done, k = 0, 0
    was = run.learner.training
    run.learner.eval()
    while done < episodes:
        m = min(cap, episodes - done)
        # a simulator that allows one instance per process (libsumo) is evaluated in place,
        # on the episode seeds a fresh environment would draw
        own = getattr(run.env, "single_simulation", False)
        env = run.env if own else run.make_env(m, seed + k)
        if own:
            kept, env.rng = env.rng, np.random.default_rng(seed + k)
        _, mt = play_episodes(env, run.learner, run.predictor if run.predictor_ready else None,
                              run.cfg.n_classes, 0.0, np.random.default_rng(seed + k), gen,
                              run.dev, edge_counts)  # fmt: skip
        if own:
            env.rng = kept
        elif hasattr(env, "close"):
            env.close()
        metrics.append({**mt, "_w": m})
        done, k = done + m, k + 1
    run.learner.train(was)
    w = np.array([x["_w"] for x in metrics], float)
    out: dict[str, Any] = {key: float(np.dot(w, [x[key] for x in metrics]) / w.sum())
                           for key in metrics[0] if key != "_w"}  # fmt: skip
    if edge_counts is not None:
        out["edge_counts"] = edge_counts.tolist()
    return out


def train(
    make_env: Callable, lcfg: LearnerConfig, cfg: TrainConfig = TrainConfig(), *,
    checkpoint: str | os.PathLike | None = None, resume: bool = False, stop_at: int | None = None,
    progress: bool = False, desc: str = "train",
) -> TrainResult:  # fmt: skip
    """Train a learner on environments from ``make_env(num_envs, seed)``.

    ``make_env`` returns a vectorised environment (the interface of
    :class:`icml26.tactic.env.ShiftingDependencyGame`). Under an initialised process group each
    rank plays its own environments and gradients are averaged.
    """
    t0 = time.perf_counter()
    run = _Run(make_env, lcfg, cfg)
    ckpt = None if checkpoint is None else Path(checkpoint)
    if resume:
        if ckpt is None:
            raise ValueError("resume=True needs a checkpoint folder")
        run.load(ckpt)
    if run.world > 1:  # identical starting weights everywhere, whatever each rank loaded
        for t in run.learner.state_dict().values():
            dist.broadcast(t, 0)
        run.target.load_state_dict(run.learner.state_dict())
    end = cfg.steps if stop_at is None else min(stop_at, cfg.steps)
    bar = tqdm(total=cfg.steps, initial=run.steps, desc=desc, disable=not progress or run.rank,
               leave=False, unit="step")  # fmt: skip
    last_save = run.steps
    while run.steps < end:
        before = run.steps
        run.iterate()
        bar.update(run.steps - before)
        if ckpt is not None and run.steps - last_save >= cfg.save_every:
            run.save(ckpt)
            last_save = run.steps
    bar.close()
    stopped = run.steps < cfg.steps
    if ckpt is not None:
        run.save(ckpt)
    final: dict[str, Any] = {}
    if not stopped:
        final = evaluate(run, cfg.final_eval_episodes, seed=cfg.seed + 2 * 10**6)
    run.learner.eval()
    if hasattr(run.env, "close"):
        run.env.close()
    return TrainResult(run.learner, run.predictor, run.curve, final, run.abstraction, run.steps,
                       run.updates, time.perf_counter() - t0, stopped)  # fmt: skip


def evaluate_checkpoint(make_env: Callable, checkpoint: str | os.PathLike, episodes: int = 256,
                        seed: int = 2 * 10**6) -> dict[str, Any]:  # fmt: skip
    """Greedy test metrics of the learner saved in ``checkpoint`` (a :func:`train` folder)."""
    path = Path(checkpoint)
    if not (path / "state.json").is_file():
        raise FileNotFoundError(f"no checkpoint in {path} (state.json / state.safetensors)")
    meta = json.loads((path / "state.json").read_text())
    cfg = TrainConfig(**{**meta["train"], "device": "cpu"})
    run = _Run(make_env, LearnerConfig(**meta["learner"]), cfg)
    run.load(path)
    return evaluate(run, episodes, seed)
