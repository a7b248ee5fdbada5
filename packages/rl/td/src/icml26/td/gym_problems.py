"""Policy evaluation on gymnasium's tabular environments (FrozenLake, CliffWalking, Taxi...).

The chain under a fixed policy is read from the environment's own model (``env.unwrapped.P``:
``P[s][a] = [(prob, next_state, reward, terminated), ...]``). Episodes are made continuing the
standard way: a terminating transition leads to a fresh start state drawn from the
environment's initial distribution, so the problem is a single ergodic chain with one discount,
which is the setting the paper analyses. States the chain never visits (holes, the goal itself)
carry no stationary mass and are dropped.
"""

from typing import Literal

import gymnasium as gym
import numpy as np
import torch

from icml26.td.problems import MarkovRewardProcess, stationary_distribution


def _grid_shape(env) -> tuple[int, int] | None:
    if hasattr(env, "nrow") and hasattr(env, "ncol"):
        return int(env.nrow), int(env.ncol)
    if hasattr(env, "shape"):
        return tuple(int(x) for x in env.shape)
    return None


def _policy(policy: np.ndarray | None, S: int, A: int) -> np.ndarray:
    """The (S, A) action probabilities, uniform by default; a clear error when malformed."""
    if policy is None:
        return np.full((S, A), 1.0 / A)
    policy = np.asarray(policy, dtype=np.float64)
    if policy.shape != (S, A) or (policy < 0).any() or not np.allclose(policy.sum(1), 1):
        raise ValueError(f"policy must be an (S, A) = ({S}, {A}) row-stochastic array")
    return policy


def gymnasium_mrp(
    env: str | gym.Env = "FrozenLake-v1",
    gamma: float = 0.9,
    policy: np.ndarray | None = None,
    features: Literal["onehot", "tiles"] = "onehot",
    tile_size: int = 2,
    device: torch.device | str = "cpu",
    **make_kwargs,
) -> MarkovRewardProcess:
    """The Markov reward process of ``policy`` on a tabular gymnasium environment.

    Args:
        env: an environment id (made with ``gymnasium.make(env, **make_kwargs)``) or an env.
        gamma: discount in [0, 1).
        policy: (S, A) action probabilities; the uniform random policy by default.
        features: ``"onehot"`` (tabular, ``||phi|| = 1``) or ``"tiles"``: one indicator per
            ``tile_size x tile_size`` square of the grid (grid worlds only).
        device: where the problem's tensors live (the chain is built on the CPU, then moved).
    """
    if isinstance(env, str):
        env = gym.make(env, **make_kwargs)
    base = env.unwrapped
    _check_tabular(base)
    model = getattr(base, "P", None)
    if not isinstance(model, dict):
        raise ValueError(f"env {base!r} exposes no tabular model env.unwrapped.P")
    S, A = int(base.observation_space.n), int(base.action_space.n)
    policy = _policy(policy, S, A)
    isd = np.asarray(getattr(base, "initial_state_distrib", np.eye(S)[0]), dtype=np.float64)
    P = np.zeros((S, S))
    r = np.zeros(S)
    for s in range(S):
        for a in range(A):
            for prob, s_next, reward, terminated in model[s][a]:
                w = policy[s, a] * prob
                r[s] += w * reward
                if terminated:
                    P[s] += w * isd  # restart: the continuing form of the episodic task
                else:
                    P[s, int(s_next)] += w
    mu = stationary_distribution(torch.from_numpy(P))
    keep = (mu > 1e-12).nonzero().squeeze(1)
    P_k = torch.from_numpy(P)[keep][:, keep]
    P_k = P_k / P_k.sum(1, keepdim=True)
    r_k = torch.from_numpy(r)[keep]
    if features == "onehot":
        phi = torch.eye(len(keep), dtype=torch.float64)
    elif features == "tiles":
        shape = _grid_shape(base)
        if shape is None:
            raise ValueError("features='tiles' needs a grid world (nrow/ncol or shape attributes)")
        if tile_size < 1:
            raise ValueError(f"tile_size must be >= 1, got {tile_size}")
        ncol = shape[1]
        rows, cols = keep // ncol, keep % ncol
        tile = (rows // tile_size) * ((ncol + tile_size - 1) // tile_size) + cols // tile_size
        used, tile = torch.unique(tile, return_inverse=True)
        phi = torch.nn.functional.one_hot(tile, len(used)).to(torch.float64)
    else:
        raise ValueError(f"features must be 'onehot' or 'tiles', got {features!r}")
    mu_k = stationary_distribution(P_k)
    name = f"{base.spec.id if base.spec else type(base).__name__} ({features})"
    return MarkovRewardProcess(P_k, r_k, phi, gamma, mu_k, name).to(device)


def gymnasium_transitions(
    env: str | gym.Env = "FrozenLake-v1",
    n: int = 10_000,
    policy: np.ndarray | None = None,
    seed: int = 0,
    **make_kwargs,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``n`` consecutive transitions ``(s, r, s')`` of ``policy`` on a tabular environment, in the
    continuing form ``gymnasium_mrp`` models: a terminating step's ``s'`` is the next episode's
    start state (and the environment's time limit is not applied), so TD learns the values of the
    same chain. Returns three arrays of shape (n,): states, rewards, next states (int, float,
    int), state ids of the environment.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be an integer >= 1, got {n!r}")
    if isinstance(env, str):
        env = gym.make(env, **make_kwargs)
    base = env.unwrapped  # stepping the unwrapped env: no TimeLimit truncation
    _check_tabular(base)
    S, A = int(base.observation_space.n), int(base.action_space.n)
    policy = _policy(policy, S, A)
    rng = np.random.default_rng(seed)
    states, rewards, nexts = np.empty(n, np.int64), np.empty(n), np.empty(n, np.int64)
    s, _ = base.reset(seed=seed)
    for i in range(n):
        a = rng.choice(A, p=policy[s])
        s_next, reward, terminated, _, _ = base.step(a)
        if terminated:
            s_next, _ = base.reset()
        states[i], rewards[i], nexts[i] = s, reward, s_next
        s = s_next
    return states, rewards, nexts


def _check_tabular(env) -> None:
    """A tabular environment: Discrete states and actions (TD here tabulates the chain)."""
    spaces = {"observation_space": env.observation_space, "action_space": env.action_space}
    bad = {k: type(v).__name__ for k, v in spaces.items() if not isinstance(v, gym.spaces.Discrete)}
    if bad:
        name = env.spec.id if getattr(env, "spec", None) else type(env).__name__
        raise ValueError(
            f"{name} is not tabular ({', '.join(f'{k} is {v}' for k, v in bad.items())}): give an "
            "environment with Discrete states and actions (FrozenLake-v1, Taxi-v3, CliffWalking-v1)"
        )
