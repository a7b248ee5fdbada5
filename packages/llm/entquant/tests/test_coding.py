import numpy as np
import pytest
import torch

from icml26.entquant import coding
from icml26.entquant.quantize import quantize_linear


def skewed_codes(shape, seed):
    g = np.random.default_rng(seed)
    p = g.dirichlet(np.full(256, 0.05))
    return torch.from_numpy(g.choice(256, size=shape, p=p).astype(np.uint8))


@pytest.mark.parametrize(
    "codes",
    [
        torch.randint(0, 256, (33, 71), generator=torch.Generator().manual_seed(0)).to(torch.uint8),
        skewed_codes((129, 257), 1),
        torch.full((5, 3), 7, dtype=torch.uint8),  # a single symbol
    ],
    ids=["uniform", "skewed", "constant"],
)
def test_numpy_reference_and_constriction_decode_the_same_codes(codes, monkeypatch):
    enc = coding.encode(codes, lanes=7)
    assert torch.equal(coding.decode(enc), codes)  # NumPy CPU path
    monkeypatch.setenv("ICML26_KERNELS", "reference")
    assert torch.equal(coding.decode(enc), codes)  # PyTorch reference
    compressed = coding.constriction_encode(codes, enc.freqs)
    assert torch.equal(coding.constriction_decode(compressed, enc.freqs, enc.shape), codes)


def test_triton_decoder_through_the_interpreter(monkeypatch):
    pytest.importorskip("triton")
    codes = skewed_codes((17, 61), 2)
    enc = coding.encode(codes, lanes=5)
    monkeypatch.setenv("ICML26_KERNELS", "interpret")
    assert torch.equal(coding.decode(enc), codes)


def test_rate_matches_the_entropy_and_constriction():
    w = torch.distributions.StudentT(5.0).sample((256, 1024)) * 0.02
    codes = quantize_linear(w, 14.5).codes
    enc = coding.encode(codes)
    h = coding.entropy_bits(codes)
    ours = enc.stored_bits / codes.numel()
    theirs = 32 * coding.constriction_encode(codes, enc.freqs).size / codes.numel()
    # 12-bit frequencies cost a little; each lane of 2048 codes adds 64 bits, the table 4096.
    assert h < ours < h * 1.01 + 64 / 2048 + 4096 / codes.numel()
    assert abs(theirs - h) < 0.02 * h


def test_encode_rejects_non_codes():
    with pytest.raises(TypeError, match="uint8"):
        coding.encode(torch.zeros(3, 3))
