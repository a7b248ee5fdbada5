"""The attention-MIL pocket model: attention weights, permutation invariance, weights as data."""

import pytest
import torch

from icml26.lipopu import PocketAttentionMIL, PocketModelConfig, protein_score
from icml26.lipopu.model import PAD


def _batch(g, b=5, l=13, d=17):
    residues = torch.randint(0, 21, (b, l), generator=g)
    lengths = torch.tensor([13, 1, 7, 4, 10])[:b]
    residues[torch.arange(l)[None] >= lengths[:, None]] = PAD
    return residues, torch.randn(b, d, generator=g)


def test_attention_sums_to_one_and_ignores_padding():
    g = torch.Generator().manual_seed(0)
    model = PocketAttentionMIL().eval()
    residues, desc = _batch(g)
    out = model(residues, desc)
    assert out.logits.shape == (5, 1) and out.attention.shape == (5, 13)
    torch.testing.assert_close(out.attention.sum(-1), torch.ones(5))
    assert (out.attention[residues == PAD] == 0).all()
    # an empty bag pools to zero instead of NaN
    empty = torch.full((1, 4), PAD)
    assert torch.isfinite(model(empty, desc[:1]).logits).all()


def test_pooled_output_is_invariant_to_permuting_residues():
    g = torch.Generator().manual_seed(1)
    model = PocketAttentionMIL(PocketModelConfig(n_outputs=2)).eval()
    residues, desc = _batch(g)
    perm = torch.randperm(13, generator=g)
    a, b = model(residues, desc), model(residues[:, perm], desc)
    torch.testing.assert_close(a.logits, b.logits, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(a.attention[:, perm], b.attention, rtol=1e-5, atol=1e-6)


def test_residue_features_and_ablations():
    g = torch.Generator().manual_seed(2)
    residues, desc = _batch(g)
    feats = torch.randn(5, 13, 8, generator=g)
    model = PocketAttentionMIL(PocketModelConfig(residue_features=8))
    assert model(residues, desc, feats).logits.shape == (5, 1)
    with pytest.raises(ValueError, match="residue_features must be"):
        model(residues, desc)
    no_bag = PocketAttentionMIL(PocketModelConfig(use_bag=False))
    assert no_bag(residues, desc).attention is None
    with pytest.raises(ValueError, match="cannot both be False"):
        PocketModelConfig(use_bag=False, use_descriptors=False)
    with pytest.raises(ValueError, match=r"descriptors must be \(B, 17\)"):
        model(residues, desc[:, :3], feats)
    with pytest.raises(TypeError, match="integer"):
        model(residues.float(), desc, feats)


def test_save_and_load_round_trip(tmp_path):
    g = torch.Generator().manual_seed(3)
    model = PocketAttentionMIL(PocketModelConfig(n_outputs=2, dim=16)).eval()
    residues, desc = _batch(g)
    model.save_pretrained(tmp_path, extra={"note": 1})
    back = PocketAttentionMIL.from_pretrained(tmp_path).eval()
    torch.testing.assert_close(back(residues, desc).logits, model(residues, desc).logits)
    assert not list(tmp_path.glob(".*"))  # no temp file left behind
    with pytest.raises(ValueError, match=r"no config\.json"):
        PocketAttentionMIL.from_pretrained(tmp_path / "missing")


def test_protein_score_pools_pockets():
    s = torch.tensor([0.1, 2.0, -1.0, 0.5, 0.7])
    protein = torch.tensor([0, 0, 1, 2, 2])
    torch.testing.assert_close(protein_score(s, protein, "max"), torch.tensor([2.0, -1.0, 0.7]))
    lse = protein_score(s, protein, "lse")
    want = torch.stack([torch.logsumexp(s[protein == k], 0) for k in range(3)])
    torch.testing.assert_close(lse, want)
    with pytest.raises(ValueError, match="pool must be"):
        protein_score(s, protein, "mean")
