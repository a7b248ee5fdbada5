import json

import numpy as np
import pytest
import torch
import torch.distributed as dist
from torch import nn

from icml26.testing import (
    assert_close,
    assert_unbiased,
    assert_variance_order,
    check_gradients,
    run_cli,
    run_distributed,
    validate_results,
)
from icml26.testing.plugin import available_devices


def test_seed_fixture_makes_draws_repeatable(seed):
    a = torch.randn(3)
    torch.manual_seed(seed)
    assert torch.equal(a, torch.randn(3))


def test_device_parametrization(device):
    assert device in available_devices()
    assert torch.zeros(1, device=device).device.type == device


def test_assert_close_passes_and_reports():
    ref = torch.linspace(0, 1, 10, dtype=torch.float64)
    assert_close(ref.float(), ref)
    bad = ref.clone()
    bad[7] += 0.5
    with pytest.raises(AssertionError, match=r"max abs error 5\.000e-01 at index \(7,\)"):
        assert_close(bad, ref)
    with pytest.raises(AssertionError, match="shape"):
        assert_close(ref[:3], ref)
    nan = ref.clone()
    nan[2] = float("nan")
    with pytest.raises(AssertionError, match="non-finite"):
        assert_close(nan, ref)
    with pytest.raises(AssertionError, match="rel_norm_tol"):
        assert_close(ref + 1e-3, ref, atol=1, rel_norm_tol=1e-6)


def test_check_gradients_against_reference_and_finite_differences():
    x = torch.randn(4, 5, requires_grad=True)
    check_gradients(lambda t: t.sin() * t, [x], lambda t: t.sin() * t, atol=1e-5, rtol=1e-4)
    check_gradients(lambda t: (t.exp() * t).sum(-1), [x])
    with pytest.raises(AssertionError, match="grad of input 0"):
        # Same forward (x^2), but a detach() drops half the gradient: a real bug to be caught.
        check_gradients(lambda t: t * t.detach(), [x], lambda t: t * t)


def test_assert_unbiased_detects_bias():
    g = torch.Generator().manual_seed(1)
    samples = torch.randn(4000, 3, generator=g, dtype=torch.float64) + 2.0
    assert_unbiased(samples, torch.full((3,), 2.0))
    with pytest.raises(AssertionError, match="looks biased"):
        assert_unbiased(samples, torch.full((3,), 2.2))


def test_assert_variance_order():
    g = torch.Generator().manual_seed(2)
    low = 0.5 * torch.randn(2000, 4, generator=g)
    high = 1.0 * torch.randn(2000, 4, generator=g)
    assert_variance_order(low, high)
    with pytest.raises(AssertionError, match="smaller variance"):
        assert_variance_order(high, low)


def _results(**overrides):
    r = {
        "package": "icml26-x",
        "version": "0.1.0",
        "experiment": "e",
        "claim": "c",
        "metrics": {"method": {"err": 0.1}, "baseline": {"err": 0.2}},
        "verdict": "reproduced",
        "seconds": 1.0,
        "config": {},
        "seed": 0,
        "device": "cpu",
        "torch": torch.__version__,
    }
    r.update(overrides)
    return r


def test_validate_results(tmp_path):
    validate_results(_results())
    path = tmp_path / "results.json"
    path.write_text(json.dumps(_results()))
    assert validate_results(path)["package"] == "icml26-x"
    with pytest.raises(ValueError, match="verdict 'great'"):
        validate_results(_results(verdict="great"))
    with pytest.raises(ValueError, match="missing field 'claim'"):
        r = _results()
        del r["claim"]
        validate_results(r)
    with pytest.raises(ValueError, match="not a finite number"):
        validate_results(_results(metrics={"method": {"a": float("nan")}, "baseline": {}}))
    path.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        validate_results(path)


def test_run_cli_reports_failures():
    out = run_cli("json.tool", ["--help"])
    assert "usage" in out.stdout
    with pytest.raises(AssertionError, match="exit code"):
        run_cli("json.tool", ["/definitely/not/here.json"])


def _ddp_train(steps: int):
    # A tiny DDP model: different data on each rank, identical weights at the end.
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        x = torch.randn(8, 3, generator=g)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"rank": rank, "weights": [p.detach().clone() for p in model.parameters()]}


def _fail():
    raise ValueError("boom on purpose")


@pytest.mark.distributed
def test_run_distributed_ddp_ranks_agree():
    results = run_distributed(_ddp_train, 5, world_size=2)
    assert [r["rank"] for r in results] == [0, 1]
    for a, b in zip(results[0]["weights"], results[1]["weights"], strict=True):
        assert torch.equal(a, b)
    # ...and training moved them (the ranks agree because DDP synchronised, not by standing still)
    torch.manual_seed(0)
    init = nn.Linear(3, 1)
    assert not torch.equal(init.weight.detach(), results[0]["weights"][0])


@pytest.mark.distributed
def test_run_distributed_surfaces_errors():
    with pytest.raises(RuntimeError, match="boom on purpose"):
        run_distributed(_fail, world_size=2)


def test_numpy_is_seeded_too(seed):
    a = np.random.rand()  # noqa: NPY002 -- checking the legacy global generator on purpose
    np.random.seed(seed)  # noqa: NPY002
    assert a == np.random.rand()  # noqa: NPY002


def test_run_readme_snippets(tmp_path):
    from icml26.testing import run_readme_snippets

    readme = tmp_path / "README.md"
    readme.write_text("# x\n```python\na = 2\n```\ntext\n```python\nb = a * 3\n```\n")
    assert run_readme_snippets(readme, cwd=tmp_path)["b"] == 6
    (tmp_path / "EMPTY.md").write_text("# nothing\n")
    with pytest.raises(AssertionError, match="no ```python"):
        run_readme_snippets(tmp_path / "EMPTY.md")
