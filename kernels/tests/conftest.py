"""Test session setup for the kernels."""

import os

import torch

# the toolkit's pytest plugin: seeding, `device` parametrization, slow/gpu/distributed markers
pytest_plugins = ["icml26.testing.plugin"]

if not torch.cuda.is_available():
    # Without a GPU, Triton can only interpret. Its language module decides between compiling
    # and interpreting when it is first imported, and torch.compile's inductor imports it too:
    # whichever test runs first, make that first import an interpreting one.
    os.environ.setdefault("TRITON_INTERPRET", "1")
