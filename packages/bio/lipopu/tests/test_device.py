"""The model, the risks and training run where their inputs live, with the CPU's numbers there."""

import numpy as np
import torch

from icml26.lipopu import (
    CompositionBags,
    PocketAttentionMIL,
    PocketModelConfig,
    Standardiser,
    TrainConfig,
    fit,
    grouped_split,
    lipopu_risk,
    nnpu_risk,
    scar_labels,
    synthetic_cohort,
)


def test_model_and_risks_match_the_cpu(device):
    g = torch.Generator().manual_seed(0)
    residues = torch.randint(0, 21, (6, 9), generator=g)
    desc = torch.randn(6, 17, generator=g)
    cpu = PocketAttentionMIL().eval()
    dev = PocketAttentionMIL().eval()
    dev.load_state_dict(cpu.state_dict())
    dev.to(device)
    want = cpu(residues, desc)
    got = dev(residues.to(device), desc.to(device))
    assert got.logits.device.type == torch.device(device).type
    torch.testing.assert_close(got.logits.cpu(), want.logits, rtol=1e-4, atol=1e-5)
    p, u = torch.randn(5, generator=g), torch.randn(12, generator=g)
    for risk in (nnpu_risk, lipopu_risk):
        a, b = risk(p, u, 0.2), risk(p.to(device), u.to(device), 0.2)
        torch.testing.assert_close(b.objective.cpu(), a.objective, rtol=1e-5, atol=1e-6)


def test_training_on_device(device):
    t = synthetic_cohort(n_proteins=60, seed=0)
    s = grouped_split(t.protein, 0)
    X = Standardiser.fit(t.descriptors[s.train])(t.descriptors)
    obs = scar_labels(t.lipid, 1.0, 0)
    model = PocketAttentionMIL(PocketModelConfig(dim=8, hidden=16)).to(device)
    result = fit(model, X, CompositionBags(t.composition), obs, s.train, s.val,
                 TrainConfig(epochs=1, batch_u=64, batch_p=8), prior=0.13)  # fmt: skip
    assert np.isfinite(result.best_val)
    assert next(model.parameters()).device.type == torch.device(device).type
