"""The public API runs where its inputs live: same samples, same numbers, on CPU or CUDA."""

import pytest
import torch
from torch import nn

from icml26.td import (
    ConstantStepSize,
    ExponentialStepSize,
    boyan_chain,
    fit_critic,
    garnet_mdp,
    gymnasium_mrp,
    stationary_distribution,
    td0,
    td0_sweep,
)


@pytest.fixture(scope="module")
def cpu_problem():
    return garnet_mdp(10, 3, 0.9, seed=0, omega=0.02)


def test_problems_are_built_on_the_requested_device(device, cpu_problem):
    dev = torch.device(device)
    problem = garnet_mdp(10, 3, 0.9, seed=0, omega=0.02, device=device)
    for mrp in (problem, problem.lazy(0.5), boyan_chain(device=device)):
        assert {t.device.type for t in (mrp.P, mrp.r, mrp.phi, mrp.mu)} == {dev.type}
        assert mrp.theta_star.device.type == dev.type
    frozen = gymnasium_mrp("FrozenLake-v1", features="tiles", device=device)
    assert frozen.P.device.type == dev.type
    # The chain is drawn on the CPU, so a seed gives the same problem everywhere.
    torch.testing.assert_close(problem.P.cpu(), cpu_problem.P, rtol=0, atol=0)
    torch.testing.assert_close(problem.theta_star.cpu(), cpu_problem.theta_star)
    mu = stationary_distribution(problem.P)
    assert mu.device.type == dev.type
    torch.testing.assert_close(mu.cpu(), cpu_problem.mu)


@pytest.mark.parametrize("sampling", ["iid", "markov"])
def test_td0_sweep_runs_on_the_problems_device_with_the_cpu_samples(device, cpu_problem, sampling):
    T = 600
    scheds = [ExponentialStepSize(0.5, T), ConstantStepSize(0.2)]
    kw = dict(sampling=sampling, reg=[0.05, 0.0], seed=3, tail_average=[False, True])
    want = td0_sweep(cpu_problem, scheds, T, 4, **kw)
    got = td0_sweep(cpu_problem.to(device), scheds, T, 4, **kw)
    assert got.device.type == torch.device(device).type
    torch.testing.assert_close(got.cpu(), want, rtol=1e-9, atol=1e-12)
    err = cpu_problem.to(device).value_error(got)
    assert err.device == got.device and err.shape == (2, 4)


def test_td0_takes_the_device_of_P(device, cpu_problem):
    p = cpu_problem
    # r, phi as NumPy arrays: they follow P to its device.
    got = td0(p.P.to(device), p.r.numpy(), p.phi.numpy(), p.gamma, ConstantStepSize(0.3), 200, 3)
    want = td0(p.P, p.r, p.phi, p.gamma, ConstantStepSize(0.3), 200, 3)
    assert got.device.type == torch.device(device).type
    torch.testing.assert_close(got.cpu(), want, rtol=1e-9, atol=1e-12)


def test_fit_critic_trains_on_the_critics_device(device, cpu_problem):
    def run(dev):
        torch.manual_seed(0)
        critic = nn.Linear(3, 1, bias=False).double().to(dev)
        fit_critic(cpu_problem.to(dev), critic, 50, eta0=0.5, batch_size=8, seed=0)
        return critic.weight.detach()

    got = run(device)
    assert got.device.type == torch.device(device).type
    torch.testing.assert_close(got.cpu(), run("cpu"), rtol=1e-9, atol=1e-12)
