"""One call that seeds every generator a test might touch."""

import random

import numpy as np
import torch


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and torch's (all devices) global generators."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the global generator is what legacy code draws from
    torch.manual_seed(seed)
