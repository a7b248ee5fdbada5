"""The pytest plugin: seeding, devices and markers for every icml26 test session."""

import os
import sys

import pytest

from icml26.testing.seeding import seed_everything

DEFAULT_SEED = 0


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:  # a package that does not use torch
        return False
    return torch.cuda.is_available()


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
    has_cuda = _has_cuda()
    for item in items:
        if "slow" in item.keywords and not config.getoption("--runslow"):
            item.add_marker(skip_slow)
        if "gpu" in item.keywords and not has_cuda:
            item.add_marker(skip_gpu)


def available_devices() -> list[str]:
    """The devices a ``device`` test runs on: cpu always, cuda when present."""
    return ["cpu", "cuda"] if _has_cuda() else ["cpu"]


def device_params() -> list:
    """``device`` parameters: cpu, and cuda marked ``gpu`` (skipped without CUDA, and selected by
    ``-m gpu`` so CUDA runs can go in a pytest process of their own)."""
    return ["cpu", pytest.param("cuda", marks=pytest.mark.gpu)]


def _triton_interpreting() -> bool:
    return "triton" in sys.modules and os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")


@pytest.fixture(autouse=True)
def _icml26_gpu_runs_compiled_kernels(request: pytest.FixtureRequest) -> None:
    # Triton picks interpreter or compiler once per process: a gpu test that runs after an
    # interpreter test would silently test the interpreter. Fail loudly instead.
    if request.node.get_closest_marker("gpu") and _triton_interpreting():
        pytest.fail(
            "Triton was imported in interpreter mode (TRITON_INTERPRET=1) earlier in this "
            "process, so this gpu test would not run compiled kernels: run gpu tests in their "
            "own process (`pytest -m gpu`, as tools/ci.py and tools/gpu_check.sh do)"
        )


def _argnames(marker: pytest.Mark) -> list[str]:
    names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
    if isinstance(names, str):
        return [n.strip() for n in names.split(",") if n.strip()]
    return list(names)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    # A test that takes a `device` argument (and does not parametrize that exact name itself)
    # runs on cpu and on cuda (the cuda case is marked gpu: skipped where CUDA is absent).
    if "device" in metafunc.fixturenames and not any(
        "device" in _argnames(m) for m in metafunc.definition.iter_markers("parametrize")
    ):
        metafunc.parametrize("device", device_params())


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
