"""The pytest plugin: seeding, devices and markers for every icml26 test session."""

import pytest
import torch

from icml26.testing.seeding import seed_everything

DEFAULT_SEED = 0


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("icml26")
    group.addoption("--runslow", action="store_true", default=False, help="run tests marked slow")
    group.addoption(
        "--icml26-seed", type=int, default=DEFAULT_SEED, help="seed for the autouse seeding fixture"
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "slow: long test, skipped unless --runslow is given")
    config.addinivalue_line("markers", "gpu: needs a CUDA device, skipped without one")
    config.addinivalue_line("markers", "distributed: spawns torch.distributed worker processes")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_slow = pytest.mark.skip(reason="slow test: pass --runslow to run it")
    skip_gpu = pytest.mark.skip(reason="needs CUDA, none is available")
    has_cuda = torch.cuda.is_available()
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(skip_slow)
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


def available_devices() -> list[str]:
    """The devices a ``device`` test runs on: cpu always, cuda when present."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def _argnames(marker: pytest.Mark) -> list[str]:
    names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test that takes a `device` argument (and does not parametrize that exact name itself)
    # runs once per available device.
    if "device" in metafunc.fixturenames and not any(
        "device" in _argnames(m) for m in metafunc.definition.iter_markers("parametrize")
    ):
        metafunc.parametrize("device", available_devices())


@pytest.fixture(autouse=True)
def _icml26_seed(request: pytest.FixtureRequest) -> int:
    """Every test starts from the same seeded global generators."""
    seed = request.config.getoption("--icml26-seed")
    seed_everything(seed)
    return seed


@pytest.fixture
def seed(_icml26_seed: int) -> int:
    """The seed this test's global generators were seeded with."""
    return _icml26_seed
