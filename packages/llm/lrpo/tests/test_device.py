"""The policy samples and scores where its weights live (cpu, and cuda when present), and its
greedy answers and log-probabilities there are the CPU's."""

import copy

import torch


def test_policy_samples_and_scores_on_the_device(tiny, device):
    on = copy.deepcopy(tiny).to(device)
    assert on.device.type == torch.device(device).type
    prompts = ["three plus four", "sept moins deux"]
    with torch.no_grad():
        want = tiny.sample(prompts, max_new=12, temperature=0.0)
        got = on.sample(prompts, max_new=12, temperature=0.0)
        assert got == want  # greedy: the same characters
        logp, mask = on.logprobs(prompts, got)
        ref_logp, ref_mask = tiny.logprobs(prompts, want)
    assert logp.device.type == torch.device(device).type
    assert torch.equal(mask.cpu(), ref_mask)
    torch.testing.assert_close(logp.cpu(), ref_logp, atol=1e-5, rtol=1e-5)
    drawn = on.sample(prompts, 8, 1.0, generator=torch.Generator().manual_seed(0))
    assert len(drawn) == 2 and all(isinstance(a, str) for a in drawn)
