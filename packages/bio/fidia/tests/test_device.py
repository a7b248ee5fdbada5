"""The policy samples and scores where its weights live (cpu, and cuda when present), and its
log-probabilities there are the CPU's."""

import torch

from icml26.fidia.policy import MPNNPolicy


def test_policy_samples_and_scores_on_the_device(helix, device):
    torch.manual_seed(0)
    cpu = MPNNPolicy.from_package()
    on = MPNNPolicy.from_package().to(device)
    on.load_state_dict(cpu.state_dict())
    assert on.device.type == torch.device(device).type
    s = on.sample(helix, 4, 0.5, fixed=[2, 3], generator=torch.Generator().manual_seed(1))
    assert s.seqs.device.type == on.device.type and s.seqs.shape == (4, len(helix))
    # the same sequences and orders score the same on both devices
    here = on.score(helix, s.seqs, s.orders, 0.5, fixed=[2, 3]).log_probs
    there = cpu.score(helix, s.seqs.cpu(), s.orders.cpu(), 0.5, fixed=[2, 3]).log_probs
    torch.testing.assert_close(here.cpu(), there, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(s.log_probs.cpu(), there, atol=1e-4, rtol=1e-4)
