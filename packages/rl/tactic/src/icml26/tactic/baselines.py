"""Every arm of the study as a learner config: TACTIC, the four baselines it is compared with at
the same budget (CASEC's variance-pruned coordination graph, DCG's full graph, QMIX and VDN's
value factorisations) and TACTIC's three ablations. All share one trainer, network width,
exploration schedule and number of environment steps (``train.py``); SUMO's fixed-time
controller is in ``sumo.py``."""

from __future__ import annotations

from dataclasses import replace

from icml26.tactic.learner import LearnerConfig

ARMS: dict[str, LearnerConfig] = {
    "TACTIC": LearnerConfig(classes=True),
    "CASEC": LearnerConfig(),
    "DCG": LearnerConfig(prune=None),
    "QMIX": LearnerConfig(kind="qmix", prune=None),
    "VDN": LearnerConfig(kind="vdn", prune=None),
    "TACTIC, predictor trained": LearnerConfig(classes=True, freeze_predictor=False),
    "TACTIC, random pruning": LearnerConfig(classes=True, prune="random"),
    "TACTIC, no pruning": LearnerConfig(classes=True, prune=None),
}


"""The demo's arms: the method, the four baselines and the three ablations."""


def arm_config(arm: str, **overrides) -> LearnerConfig:
    if arm not in ARMS:
        raise ValueError(f"unknown arm {arm!r}; choose from {list(ARMS)}")
    return replace(ARMS[arm], **overrides)
