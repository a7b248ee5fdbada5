"""Test session setup for the kernels."""

import os

import torch

if not torch.cuda.is_available():
    # Without a GPU, Triton can only interpret. Its language module decides between compiling
    # and interpreting when it is first imported, and torch.compile's inductor imports it too:
    # whichever test runs first, make that first import an interpreting one.
    os.environ.setdefault("TRITON_INTERPRET", "1")
