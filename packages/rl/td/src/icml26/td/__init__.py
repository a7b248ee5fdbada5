"""icml26.td: TD(0) with exponential step sizes.

Paper: Yunxiang Li, Mark Schmidt, Reza Babanezhad, Sharan Vaswani, "Towards Parameter-Free
Temporal Difference Learning" (arXiv 2603.02577, ICML 2026).

Implemented: linear TD(0) with the exponential step size ``eta_t = eta0 (beta/T)^(t/T)`` (needs
the horizon T, not omega nor the mixing time), i.i.d. and single-trajectory Markov sampling, the
regularised update for Markov sampling, the exact TD fixed point, the regularised fixed point and
the D-norm error; the baselines (constant, c/(t+t0), 1/sqrt(t), the omega-aware oracle, the
mixing-time-aware schedule, projection, tail and Polyak-Ruppert averaging), vectorised over
problems, arms and runs and read at every horizon of one pass (``td0_grid``); fitted rates with
bootstrap intervals (``loglog_slope``); Garnet chains with a target omega, Boyan's chain, lazy
chains, gymnasium's tabular environments; TD(0) from sampled transitions (``LinearTD``,
``td0_update``) for environments and replay buffers.

Reconstructed (the paper's constants were not available to us; see the README): the default
``eta0 = 1/(1 + gamma)`` of the demo, ``lambda = 1/sqrt(T)`` for Markov sampling, the oracle's
constants (taken from Bhandari et al., 2018), the mixing-time schedule's shift and constant.
"""

from icml26.td.gym_problems import gymnasium_mrp, gymnasium_transitions
from icml26.td.linear import LinearTD, td0_update
from icml26.td.problems import (
    MarkovRewardProcess,
    boyan_chain,
    check_problem,
    garnet_mdp,
    stationary_distribution,
    td_fixed_point,
)
from icml26.td.rates import Slope, loglog_slope
from icml26.td.schedules import (
    ConstantStepSize,
    ExponentialStepSize,
    InverseSqrtStepSize,
    InverseTimeStepSize,
    MixingTimeStepSize,
    OracleStepSize,
    StepSizeSchedule,
    exponential_step_size,
)
from icml26.td.td import Arm, td0, td0_grid, td0_sweep
from icml26.td.train import fit_critic
from icml26.testing.results import package_version

# The version lives in pyproject.toml only (installed metadata, or the source tree's file).
__version__ = package_version("icml26-td", __file__)

__all__ = [
    "Arm",
    "ConstantStepSize",
    "ExponentialStepSize",
    "InverseSqrtStepSize",
    "InverseTimeStepSize",
    "LinearTD",
    "MarkovRewardProcess",
    "MixingTimeStepSize",
    "OracleStepSize",
    "Slope",
    "StepSizeSchedule",
    "boyan_chain",
    "check_problem",
    "exponential_step_size",
    "fit_critic",
    "garnet_mdp",
    "gymnasium_mrp",
    "gymnasium_transitions",
    "loglog_slope",
    "stationary_distribution",
    "td0",
    "td0_grid",
    "td0_sweep",
    "td0_update",
    "td_fixed_point",
]
