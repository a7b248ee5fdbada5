"""ProteinMPNN as a policy: stored decoding orders, re-scoring, fixed motifs, the KL reference."""

import pytest
import torch

from icml26.fidia.data import ALPHABET
from icml26.fidia.policy import MPNNPolicy, load_mpnn, weights_path


@pytest.mark.parametrize("temperature", [1.0, 0.3])
def test_rescoring_with_the_stored_order_reproduces_the_sampling_log_prob(policy, helix,
                                                                          temperature):  # fmt: skip
    g = torch.Generator().manual_seed(1)
    s = policy.sample(helix, 6, temperature, fixed=[3, 4, 5], generator=g)
    scores = policy.score(helix, s.seqs, s.orders, temperature, fixed=[3, 4, 5])
    torch.testing.assert_close(scores.log_probs.detach(), s.log_probs, rtol=1e-5, atol=1e-4)
    # a different order gives a different log-probability: the order is part of the sample
    other = s.orders[:, list(range(3)) + list(range(3, 20))[::-1]]
    moved = policy.log_prob(helix, s.seqs, other, temperature, fixed=[3, 4, 5])
    assert (moved.detach() - s.log_probs).abs().max() > 1e-3


def test_teacher_forced_scores_equal_proteinmpnn_forward(policy, helix):
    """The re-scoring reuses ProteinMPNN's modules; its numbers equal the package's forward."""
    s = policy.sample(helix, 2, 1.0, generator=torch.Generator().manual_seed(2))
    L = len(helix)
    ones = torch.ones(2, L)
    with torch.no_grad():
        lp = policy.mpnn(helix.X[None].expand(2, -1, -1, -1), s.seqs, ones, ones,
                         helix.residue_idx[None].expand(2, -1),
                         helix.chain_encoding[None].expand(2, -1), None,
                         use_input_decoding_order=True, decoding_order=s.orders)  # fmt: skip
    lp20 = torch.log_softmax(lp[..., :20], -1)  # X dropped, as the policy does
    ours = policy.score(helix, s.seqs, s.orders).token_log_probs
    # float32 log-softmax: the error follows the magnitude of each log-probability
    torch.testing.assert_close(ours.detach(), lp20.gather(-1, s.seqs[..., None])[..., 0],
                               rtol=1e-5, atol=1e-6)  # fmt: skip


def test_fixed_positions_keep_the_native_residue_and_x_is_never_sampled(policy, helix):
    native = helix.native.clone()
    fixed = [0, 7, 19]
    s = policy.sample(helix, 32, 2.0, fixed=fixed, generator=torch.Generator().manual_seed(3))
    assert (s.seqs[:, fixed] == native[fixed]).all()
    assert (s.seqs != ALPHABET.index("X")).all()
    assert (s.orders[:, :3].sort(1).values == torch.tensor(fixed)).all()  # motif decoded first
    assert len(set(map(tuple, s.seqs.tolist()))) > 20


def test_only_the_last_layers_train_and_the_reference_stays_put(policy, helix):
    s = policy.sample(helix, 4, 1.0, generator=torch.Generator().manual_seed(4))
    out = policy.score(helix, s.seqs, s.orders)
    assert torch.equal(out.kl.detach(), torch.zeros(4))
    out.log_probs.sum().backward()
    trained = {id(p) for p in policy.trainable_parameters()}
    for name, p in policy.named_parameters():
        has_grad = p.grad is not None and p.grad.abs().sum() > 0
        assert has_grad == (id(p) in trained), name
    with torch.no_grad():
        for p in policy.trainable_parameters():
            p.add_(0.05 * torch.randn_like(p))
    out = policy.score(helix, s.seqs, s.orders)
    assert (out.kl > 0).all()
    assert policy.reference[-1].weight.requires_grad is False


def test_save_and_load_the_trained_layers(policy, helix, tmp_path):
    with torch.no_grad():
        policy.mpnn.W_out.bias.add_(1.0)
    policy.save_pretrained(tmp_path / "ckpt")
    assert {p.name for p in (tmp_path / "ckpt").iterdir()} == {"policy.safetensors", "config.json"}
    loaded = MPNNPolicy.from_pretrained(tmp_path / "ckpt")
    torch.testing.assert_close(loaded.mpnn.W_out.bias, policy.mpnn.W_out.bias)
    s = policy.sample(helix, 3, 1.0, generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(loaded.log_prob(helix, s.seqs, s.orders),
                               policy.log_prob(helix, s.seqs, s.orders))  # fmt: skip
    with pytest.raises(ValueError, match=r"no config\.json"):
        MPNNPolicy.from_pretrained(tmp_path)


def test_released_weights_and_the_ca_only_model():
    assert weights_path("v_48_002", "soluble").is_file()
    ca = MPNNPolicy(load_mpnn("v_48_020", "ca"))
    assert ca.ca_only
    with pytest.raises(ValueError, match="has"):
        weights_path("v_99_000")
    with pytest.raises(ValueError, match="kind"):
        weights_path(kind="membrane")


def test_ca_only_policy_samples(helix):
    pol = MPNNPolicy.from_package(kind="ca")
    s = pol.sample(helix, 2, 0.5, generator=torch.Generator().manual_seed(6))
    # sequence log-probabilities are float32 sums of ~100 in magnitude: the summation order
    # differs across CPUs, so the tolerance is relative to the sum
    torch.testing.assert_close(pol.log_prob(helix, s.seqs, s.orders, 0.5), s.log_probs,
                               rtol=1e-5, atol=1e-6)  # fmt: skip


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"seqs": torch.zeros(2, 5, dtype=torch.long)}, r"\(n, 20\)"),
        ({"orders": torch.zeros(2, 20, dtype=torch.long)}, "permutation"),
        ({"seqs": torch.full((2, 20), 30)}, "indices"),
        ({"seqs": torch.full((2, 20), 20)}, "holds X"),
    ],
)
def test_bad_batches_raise(policy, helix, kwargs, message):
    args = {"seqs": torch.zeros(2, 20, dtype=torch.long),
            "orders": torch.arange(20).expand(2, 20), **kwargs}  # fmt: skip
    with pytest.raises(ValueError, match=message):
        policy.score(helix, args["seqs"], args["orders"])


def test_bad_sampling_arguments_raise(policy, helix):
    with pytest.raises(ValueError, match="n must be"):
        policy.sample(helix, 0)
    with pytest.raises(ValueError, match="temperature"):
        policy.sample(helix, 2, 0.0)
    with pytest.raises(ValueError, match="fixed positions"):
        policy.sample(helix, 2, fixed=[25])
    with pytest.raises(ValueError, match="every position"):
        policy.sample(helix, 2, fixed=range(20))
    with pytest.raises(ValueError, match="trainable_layers"):
        MPNNPolicy(load_mpnn(), trainable_layers=4)


def test_rescoring_holds_when_not_every_residue_is_a_neighbour(policy):
    """L = 64 > 48 neighbours: the sampler's per-step gathers meet a sparse graph."""
    from icml26.fidia.data import ideal_helix

    long = ideal_helix(64)
    s = policy.sample(long, 3, 0.5, fixed=[10, 40], generator=torch.Generator().manual_seed(7))
    out = policy.log_prob(long, s.seqs, s.orders, 0.5, fixed=[10, 40])
    torch.testing.assert_close(out.detach(), s.log_probs, rtol=1e-5, atol=1e-4)
