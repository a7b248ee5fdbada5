"""icml26.asbm: Adjoint Schrödinger Bridge Matching.

Paper: "Adjoint Schrödinger Bridge Matching" (arXiv 2602.15396, ICML 2026); official code
swswss/ASBM. The data is the source and an energy-defined prior the target; see
``icml26.asbm.asbm`` and the README for what follows the official code and what differs.

Implemented: Brownian and VP reference SDEs with their bridges; adjoint matching and corrector
matching (stage 1) with a replay buffer; bridge matching on the learned coupling (stage 2), as the
official backward score (Euler-Maruyama and Heun probability-flow samplers) or as posterior means
(ODE and SDE samplers), with a moving average; the stage-2 positive control on the independent
coupling (``icml26.asbm.controls``); one-step distillation (distribution matching, regression);
independent, minibatch-OT and Schrödinger-bridge (SB-CFM) conditional flow matching and one-round
reflow baselines; MMD, sliced W2, straightness and a classifier-feature Fréchet proxy.
"""

from icml26.asbm.asbm import (
    ASBM,
    ReplayBuffer,
    adjoint_matching_loss,
    bridge_matching_loss,
    bridge_score_loss,
    corrector_matching_loss,
)
from icml26.asbm.baselines import FlowMatching, Reflow, ot_pairing, sb_pairing, sb_path
from icml26.asbm.metrics import frechet_distance, mmd, sliced_w2, straightness
from icml26.asbm.nets import MLP, TinyUNet
from icml26.asbm.sde import VPSDE, BrownianSDE, GaussianEnergy
from icml26.testing.results import package_version

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-asbm", __file__)

__all__ = [
    "ASBM",
    "MLP",
    "VPSDE",
    "BrownianSDE",
    "FlowMatching",
    "GaussianEnergy",
    "Reflow",
    "ReplayBuffer",
    "TinyUNet",
    "adjoint_matching_loss",
    "bridge_matching_loss",
    "bridge_score_loss",
    "corrector_matching_loss",
    "frechet_distance",
    "mmd",
    "ot_pairing",
    "sb_pairing",
    "sb_path",
    "sliced_w2",
    "straightness",
]
