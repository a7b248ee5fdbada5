"""Every learner (TACTIC's class-conditioned graph, CASEC's pruned graph, QMIX) runs where its
inputs live (cpu, and cuda when present), giving the CPU's utilities, payoffs and actions."""

import pytest
import torch

from icml26.tactic import Learner, arm_config


@pytest.mark.parametrize("arm", ["TACTIC", "CASEC", "QMIX"])
def test_learner_unrolls_and_acts_on_the_device(arm, device):
    torch.manual_seed(0)
    cpu = Learner(arm_config(arm), n_agents=4, n_actions=5, input_dim=9, state_dim=6,
                  n_classes=3)  # fmt: skip
    on = Learner(arm_config(arm), n_agents=4, n_actions=5, input_dim=9, state_dim=6,
                 n_classes=3).to(device)  # fmt: skip
    on.load_state_dict(cpu.state_dict())
    g = torch.Generator().manual_seed(1)
    inputs = torch.randn(2, 3, 4, 9, generator=g)
    probs = torch.softmax(torch.randn(2, 3, 4, 3, generator=g), -1)
    want = cpu(inputs, probs)
    got = on(inputs.to(device), probs.to(device))
    assert got.q.device.type == torch.device(device).type
    torch.testing.assert_close(got.q.cpu(), want.q, atol=1e-5, rtol=1e-5)
    if want.f is not None:
        torch.testing.assert_close(got.f.cpu(), want.f, atol=1e-5, rtol=1e-5)
