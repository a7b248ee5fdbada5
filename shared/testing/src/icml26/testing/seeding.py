"""One call that seeds every generator a test might touch."""

import random

import numpy as np


def seed_everything(seed: int = 0) -> None:
    """Seed Python's, NumPy's and (when installed) torch's global generators, all devices."""
    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- the global generator is what legacy code draws from
    try:
        import torch
    except ImportError:  # a package that does not use torch has no torch generator to seed
        return
    torch.manual_seed(seed)
