import pytest
import torch

from icml26.lrpo import CharGPT
from icml26.lrpo.data import prompt


def _greedy_no_cache(model, text, n):
    out = ""
    for _ in range(n):
        ids, valid = model.batch([text + out], left=False)
        nxt = model(ids, valid)[0][0, -1].clone()
        nxt[0] = -torch.inf
        c = model.vocab[int(nxt.argmax())]
        if c == "\n":
            break
        out += c
    return out


def test_cached_sampler_matches_full_recompute_with_left_padding(tiny):
    prompts = [prompt("what is 1 plus 2?", "en"), prompt("ile to 10 odjąć 3?", "pl"), "x?"]
    got = tiny.sample(prompts, max_new=12, temperature=0.0)
    for p, g in zip(prompts, got, strict=True):
        assert g == _greedy_no_cache(tiny, p, 12)


def test_logprobs_cover_completion_and_eos(tiny):
    lp, mask = tiny.logprobs(["ab?", "a?"], ["xy", ""])
    assert lp.shape == mask.shape
    assert mask.sum(1).tolist() == [3, 1]  # completion characters + EOS
    assert (lp[mask] <= 0).all()
    # the same completion scored alone gives the same numbers (padding is inert)
    lp1, m1 = tiny.logprobs(["a?"], [""])
    assert torch.allclose(lp1[m1], lp[1][mask[1]], atol=1e-5)


def test_sampling_with_temperature_is_seeded(tiny):
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    p = [prompt("wat is 4 min 2?", "nl")] * 4
    assert tiny.sample(p, 10, 1.0, g1) == tiny.sample(p, 10, 1.0, g2)


def test_save_and_load_round_trip(tiny, tmp_path):
    tiny.save_pretrained(tmp_path / "m", meta={"note": "x"})
    back = CharGPT.from_pretrained(tmp_path / "m")
    assert back.meta == {"note": "x"} and back.vocab == tiny.vocab
    for a, b in zip(tiny.state_dict().values(), back.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    assert not list(tmp_path.glob("m/*.tmp"))


def test_bad_inputs(tiny, tmp_path):
    with pytest.raises(ValueError, match="not in the alphabet"):
        tiny.encode("日本")
    with pytest.raises(ValueError, match="block_size"):
        tiny.batch(["a" * 500])
    with pytest.raises(ValueError, match="empty"):
        tiny.batch([])
    with pytest.raises(ValueError, match="temperature"):
        tiny.sample(["a"], temperature=-1.0)
    with pytest.raises(ValueError, match="not a CharGPT folder"):
        CharGPT.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text("{oops")
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ValueError, match="malformed"):
        CharGPT.from_pretrained(tmp_path)


def test_truncated_completions_are_not_credited_an_eos(tiny):
    texts, ended = tiny.sample(["a?", "b?"], max_new=3, temperature=1.0, return_ended=True)
    _, m_end = tiny.logprobs(["a?"] * 2, ["xyz", "xyz"], ended=[True, False])
    assert m_end.sum(1).tolist() == [4, 3]
    assert all(len(t) <= 3 for t in texts) and len(ended) == 2
    for t, e in zip(texts, ended, strict=True):
        assert e or len(t) == 3
