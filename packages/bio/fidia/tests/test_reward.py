"""The composite reward: gates zero it, windows and terms, the designability proxy."""

import pytest
import torch

from icml26.fidia.data import encode
from icml26.fidia.reward import CompositeReward, DesignabilityProxy, longest_run


def _const(value):
    return lambda seqs: torch.full((len(seqs),), value, dtype=torch.float64)


@pytest.fixture
def reward(helix):
    return CompositeReward(helix, fixed=[0, 1], required={5: "C", 9: "CS"}, forbidden="CW",
                           designability=_const(0.5), charge=(-2, 2),
                           hydrophobic=(0.1, 0.6))  # fmt: skip


def _seq(text):
    return encode(text)[None]


def test_a_passing_design_and_each_gate_that_zeroes_it(reward):
    # the helix's native is all alanine (index 0)
    good = "AAKEACALESAKEALAKEAL"
    out = reward(_seq(good))
    assert out.gate.item() and out.reward.item() > 0
    for bad, why in [("GAKEACALESAKEALAKEAL", "fixed motif mutated"),
                     ("AAKEAAALESAKEALAKEAL", "required cysteine missing"),
                     ("AAKEACALEAAKEALAKEAL", "required C/S missing"),
                     ("AAKEACALESAKEWLAKEAL", "forbidden W"),
                     ("AAKEACALESCKEALAKEAL", "free cysteine")]:  # fmt: skip
        out = reward(_seq(bad))
        assert not out.gate.item() and out.reward.item() == 0.0, why
        assert not out.success.item(), why


def test_success_needs_the_windows_and_the_native_designability(helix):
    def d(seqs):  # the native (all A) scores 0.5, everything else 0.4
        return torch.where((seqs == 0).all(1), 0.5, 0.4).double()

    r = CompositeReward(helix, designability=d, charge=(-3, 3), hydrophobic=(0.0, 1.0))
    assert r.native_designability == 0.5
    assert not r(_seq("AAKEACALESAKEALAKEAL")).success.item()  # designability 0.4 < 0.5
    r2 = CompositeReward(helix, designability=_const(0.5), charge=(-1, 1))
    out = r2(_seq("KKKKAAAAAAAAAAAAAAAA"))  # charge +4 outside (-1, 1)
    assert out.gate.item() and not out.success.item()
    assert out.terms["charge_ok"].item() < 1


def test_developability_terms():
    seqs = encode("KKKEEAAD")[None]
    assert longest_run(seqs, "KE").item() == 5
    assert longest_run(encode("AKAEAK")[None], "KE").item() == 1


def test_designability_proxy_prefers_what_the_independent_model_prefers(helix):
    proxy = DesignabilityProxy(helix)
    assert "proxy" in proxy.name
    vals = proxy(torch.stack([encode("AEELLKKAEELLKKAEELLK"), encode("WWWWWWWWWWWWWWWWWWWW")]))
    assert vals.shape == (2,) and 0 < vals[1] < vals[0] < 1  # a helix reads as helix-formers


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"fixed": [30]}, "outside"),
        ({"required": {2: "B"}}, "20 amino acids"),
        ({"forbidden": "Z"}, "20 amino acids"),
        ({"motif": {3: "AC"}}, "single residues"),
        ({"charge": (3, -3)}, "low <= high"),
        ({"max_repeat": 0}, "max_repeat"),
        ({"weights": (0, 0, 0)}, "weights"),
    ],
)
def test_bad_settings_raise(helix, kwargs, message):
    with pytest.raises(ValueError, match=message):
        CompositeReward(helix, designability=_const(0.5), **kwargs)


def test_bad_sequences_and_a_bad_designability_raise(helix, reward):
    with pytest.raises(ValueError, match=r"\(n, 20\)"):
        reward(torch.zeros(2, 5, dtype=torch.long))
    nan = CompositeReward.__new__(CompositeReward)
    nan.__dict__.update(reward.__dict__, designability=_const(float("nan")))
    with pytest.raises(ValueError, match="finite"):
        nan(_seq("AAKEACALESAKEALAKEAL"))


def test_an_unknown_native_residue_at_a_fixed_position_is_left_out_of_the_proxy(helix):
    import dataclasses

    native = helix.native.clone()
    native[2] = 20  # X: a residue the structure does not name
    bb = dataclasses.replace(helix, native=native)
    r = CompositeReward(bb, fixed=[2])
    seqs = native[None].clone()
    seqs[0, 5] = encode("L")[0]
    out = r(seqs)
    assert out.gate.item() and 0 < out.terms["designability"].item() < 1
