"""The training loop: semi-gradient TD(0) for a torch critic (any ``nn.Module``) driven by
``ExponentialStepSize``.

The linear case of the paper carries over as the usual deep-RL recipe: minimise
``0.5 * (r + gamma * V(s').detach() - V(s))^2`` over mini-batches with SGD, the learning rate
following ``eta_t = eta0 (beta/T)^(t/T)``. Under ``torchrun`` the critic is wrapped in
DistributedDataParallel and every rank draws its own samples (seed + 1000 rank), so the same loop
runs on one process or many.

The critic trains on the device of its parameters. States are sampled on the CPU from a seeded
generator (the same transitions on every device) and only the indices travel.
"""

import torch
import torch.distributed as dist
from torch import nn

from icml26.td.problems import MarkovRewardProcess
from icml26.td.schedules import ExponentialStepSize


def fit_critic(
    problem: MarkovRewardProcess,
    critic: nn.Module,
    horizon: int,
    eta0: float = 0.5,
    batch_size: int = 32,
    seed: int = 0,
) -> nn.Module:
    """Train ``critic`` (maps features (B, d) to values (B, 1)) by TD(0) on i.i.d. transitions.

    Returns the trained critic (unwrapped from DDP when running distributed).
    """
    if not isinstance(problem, MarkovRewardProcess):
        raise TypeError(f"problem must be a MarkovRewardProcess, got {type(problem).__name__}")
    if not isinstance(critic, nn.Module) or next(critic.parameters(), None) is None:
        raise TypeError("critic must be a torch module with parameters (features -> values)")
    for name, v in (("horizon", horizon), ("batch_size", batch_size)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not 0 < eta0 < float("inf"):
        raise ValueError(f"eta0 must be a finite step > 0, got {eta0!r}")
    distributed = dist.is_available() and dist.is_initialized()
    rank = dist.get_rank() if distributed else 0
    model = nn.parallel.DistributedDataParallel(critic) if distributed else critic
    opt = torch.optim.SGD(model.parameters(), lr=eta0)
    sched = ExponentialStepSize(eta0, horizon, optimizer=opt)
    gen = torch.Generator().manual_seed(seed + 1000 * rank)
    weight = next(critic.parameters())
    phi = problem.phi.to(weight.device, weight.dtype)
    r = problem.r.to(weight.device, weight.dtype)
    mu_cpu, P_cpu = problem.mu.cpu(), problem.P.cpu()
    for _ in range(horizon):
        s = torch.multinomial(mu_cpu, batch_size, replacement=True, generator=gen)
        s_next = torch.multinomial(P_cpu[s], 1, generator=gen).squeeze(1)
        s, s_next = s.to(weight.device), s_next.to(weight.device)
        with torch.no_grad():
            target = r[s] + problem.gamma * critic(phi[s_next]).squeeze(-1)
        loss = 0.5 * (target - model(phi[s]).squeeze(-1)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
    return critic
