import pytest
import torch

from icml26.fidia.data import ideal_helix
from icml26.fidia.policy import MPNNPolicy

# the toolkit's pytest plugin: seeding, `device` parametrization, slow/gpu/distributed markers
pytest_plugins = ["icml26.testing.plugin"]


@pytest.fixture(scope="session")
def helix():
    return ideal_helix(20)


@pytest.fixture
def policy():
    torch.manual_seed(0)
    return MPNNPolicy.from_package()
