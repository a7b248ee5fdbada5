import pytest
import torch

from icml26.lrpo import CharGPT, GPTConfig


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    return CharGPT(GPTConfig(n_layer=2, n_head=2, n_embd=32))
