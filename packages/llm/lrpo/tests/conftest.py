import pytest
import torch

from icml26.lrpo import CharGPT, GPTConfig

# the toolkit's pytest plugin: seeding, `device` parametrization, slow/gpu/distributed markers
pytest_plugins = ["icml26.testing.plugin"]


@pytest.fixture
def tiny():
    torch.manual_seed(0)
    return CharGPT(GPTConfig(n_layer=2, n_head=2, n_embd=32))
