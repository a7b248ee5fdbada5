"""TACTIC: trajectory-abstraction-conditioned sparse coordination graphs for cooperative MARL
(ICML 2026).

Reconstructed from the paper's abstract and the methods it combines (the paper's body and code
are not available; the README lists every reconstructed choice):

- trajectory abstraction as in TRAMA (arXiv 2503.01440): a VQ-VAE with a coverage term over
  windows of joint-observation trajectories, k-means of the quantised embeddings into
  K task classes (:class:`TrajectoryVQVAE`, :func:`fit_classes`);
- a pretrained, frozen per-agent recurrent class predictor whose output conditions the learner
  (:class:`ClassPredictor`, :func:`train_predictor`);
- a semantic-conditioned sparse coordination graph in DCG / CASEC form (arXiv 2106.02886):
  low-rank payoffs with a closed-form payoff variance, per-step pruning to the most sensitive
  edges, anytime max-sum (:mod:`icml26.tactic.graph`);
- the baselines VDN, QMIX, DCG and CASEC and three ablations in one learner
  (:class:`Learner`, :data:`ARMS`), one PyMARL-style trainer (:func:`train`);
- environments: the shifting-dependency game (vectorised numpy and a PettingZoo ``ParallelEnv``)
  and SUMO traffic-signal control through sumo-rl (``pip install icml26-tactic[sumo]``).
"""

from icml26.tactic.abstraction import (
    ClassFit,
    ClassPredictor,
    TrajectoryVQVAE,
    fit_classes,
    train_predictor,
)
from icml26.tactic.baselines import ARMS, arm_config
from icml26.tactic.env import (
    GameConfig,
    ShiftingDependencyGame,
    ShiftingDependencyParallelEnv,
    task_matchings,
)
from icml26.tactic.graph import (
    all_edges,
    brute_force_greedy,
    max_sum,
    payoff_matrix,
    payoff_variance,
    q_tot,
    select_edges,
)
from icml26.tactic.learner import Learner, LearnerConfig, StepOut
from icml26.tactic.train import EpisodeBuffer, TrainConfig, TrainResult, evaluate, train

__all__ = [
    "ARMS",
    "ClassFit",
    "ClassPredictor",
    "EpisodeBuffer",
    "GameConfig",
    "Learner",
    "LearnerConfig",
    "ShiftingDependencyGame",
    "ShiftingDependencyParallelEnv",
    "StepOut",
    "TrainConfig",
    "TrainResult",
    "TrajectoryVQVAE",
    "all_edges",
    "arm_config",
    "brute_force_greedy",
    "evaluate",
    "fit_classes",
    "max_sum",
    "payoff_matrix",
    "payoff_variance",
    "q_tot",
    "select_edges",
    "task_matchings",
    "train",
    "train_predictor",
]
