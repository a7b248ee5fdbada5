"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.testing import assert_rejects
from icml26.varjepa import FeatureTokenizer, elbo_terms

RETURNED = {
    "ProbeResult": "fit_probe returns it",
    "Split": "split_table returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def test_numbers_stored_as_text_are_refused_not_made_categories():
    frame = pd.DataFrame({"age": ["31", "45", "27.5", None], "city": ["a", "b", "a", "c"]})
    message = str(assert_rejects(lambda: FeatureTokenizer().fit(frame), "age"))
    assert "pd.to_numeric" in message
    # named categorical on purpose (codes), or converted: accepted
    FeatureTokenizer(categorical=["age", "city"]).fit(frame)
    converted = frame.assign(age=pd.to_numeric(frame["age"]))
    assert FeatureTokenizer().fit(converted).numerical_ == ["age"]


def test_text_columns_of_words_stay_categorical():
    frame = pd.DataFrame({"x": [1.0, 2.0], "colour": ["red", "1"]})
    assert FeatureTokenizer().fit(frame).categorical_ == ["colour"]


@pytest.mark.parametrize("which", range(4))
def test_elbo_terms_refuses_non_finite_terms(which):
    terms = [torch.zeros(3) for _ in range(4)]
    terms[which][1] = float("nan")
    names = ("loglik_target", "loglik_context", "kl_target", "kl_context")
    assert_rejects(lambda: elbo_terms(*terms), names[which])


def test_tokenizer_refuses_inf_and_non_numeric_arrays():
    assert_rejects(lambda: FeatureTokenizer().fit(np.array([[1.0, np.inf]])), "inf")
    assert_rejects(lambda: FeatureTokenizer().fit(np.array([["a", "b"]])), "X")


from icml26.varjepa import (  # noqa: E402
    ContextTargetMasks,
    FeatureEmbedding,
    ModelConfig,
    TrainConfig,
    VarJEPAEmbedder,
    fit_probe,
    gaussian_kl,
    gaussian_log_likelihood,
    load_pretrained,
    load_table,
    rankme,
    read_csv,
    reparameterize,
    sample_masks,
    score,
    split_table,
    table_from_frame,
)


def test_gaussian_helpers_name_shapes_that_do_not_match():
    a, b = torch.zeros(3, 2), torch.zeros(3, 3)
    assert_rejects(lambda: gaussian_kl(a, b), "logvar_q")
    assert_rejects(lambda: gaussian_log_likelihood(a, b, a), "mean")
    assert_rejects(lambda: reparameterize(a, b), "logvar")


def test_tables_and_splits_name_what_is_wrong(tmp_path):
    assert_rejects(lambda: load_table("nope"), "nope")
    assert_rejects(lambda: read_csv(tmp_path / "absent.csv", "y"), "absent.csv")
    assert_rejects(lambda: table_from_frame(pd.DataFrame({"a": [1, 2]}), "b"), "target")
    wine = load_table("wine")
    assert_rejects(lambda: split_table(wine, 0, val=0.6, test=0.6), "val and test")
    assert_rejects(lambda: load_pretrained(tmp_path), "config.json")


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: ModelConfig(dim=-1), "dim"),
        (lambda: TrainConfig(steps=-1), "steps"),
        (lambda: VarJEPAEmbedder(model="bert").fit(pd.DataFrame({"a": [1.0, 2.0]})), "model"),
        (lambda: FeatureEmbedding(-1, [], 8), "n_numerical"),
        (lambda: sample_masks(0, 5, torch.Generator()), "batch"),
        (lambda: sample_masks(2, 5, torch.Generator(), context_share=(0.9, 0.2)), "context_share"),
        (
            lambda: ContextTargetMasks(
                torch.zeros(2, 3, dtype=torch.long), torch.zeros(3, 1).long()
            ),
            "target",
        ),
        (lambda: rankme(torch.randn(5)), "rankme"),
        (lambda: score([0, 1], [0, 1], "ranking"), "task"),
        (lambda: score([0, 1], [0], "classification"), "y_pred"),
        (
            lambda: fit_probe("svm", *[np.zeros((4, 2)), np.zeros(4)] * 3, task="classification"),
            "svm",
        ),
    ],
)
def test_configs_and_helpers_name_a_bad_setting(make, name):
    assert_rejects(make, name)


def test_tables_models_and_their_helpers_name_inputs_of_the_wrong_kind():
    import icml26.varjepa as V

    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0.5, 0.1, 0.2]})
    assert_rejects(lambda: V.Table("t", frame.to_numpy(), np.zeros(3), "regression"), "features")
    assert_rejects(lambda: V.Table("t", frame, np.zeros(3), "ranking"), "task")
    assert_rejects(lambda: V.Table("t", frame, np.zeros(2), "regression"), "targets")
    cfg = V.ModelConfig(dim=8, depth=1, heads=2, predictor_dim=8, predictor_depth=1)
    assert_rejects(lambda: V.VarTJEPA(2, [], cfg, beta=float("inf")), "beta")
    model = V.VarTJEPA(2, [], cfg)
    rows = FeatureTokenizer().fit_transform(frame)
    assert_rejects(lambda: V.embed_rows("model", rows), "model")
    assert_rejects(lambda: V.embed_rows(model, frame), "rows")
    assert_rejects(lambda: V.embed_rows(model, rows, batch=0), "batch")
    assert_rejects(lambda: V.uncertainty_calibration(V.TJEPA(2, [], cfg), rows), "VarTJEPA")
    assert_rejects(lambda: V.uncertainty_calibration(model, rows, draws=0), "draws")
    assert_rejects(lambda: V.pretrain("model", rows), "model")
    assert_rejects(lambda: V.pretrain(model, frame), "rows")
    terms = model.elbo(rows, V.sample_masks(len(rows), 2, torch.Generator().manual_seed(0)))
    assert isinstance(terms, V.ElboTerms)  # a record the model returns
    assert isinstance(V.__version__, str) and V.__version__


def test_encoded_rows_built_by_hand_are_checked():
    from icml26.varjepa.tokenizer import EncodedRows

    num, miss, cat = torch.zeros(3, 2), torch.zeros(3, 2, dtype=torch.bool), torch.ones(3, 1).long()
    EncodedRows(num, miss, cat)
    assert_rejects(lambda: EncodedRows(num.fill_(float("nan")), miss, cat), "num")
    assert_rejects(lambda: EncodedRows(torch.zeros(3, 2), miss[:, :1], cat), "num_missing")
    assert_rejects(lambda: EncodedRows(torch.zeros(3, 2), miss, cat.float()), "cat")
    assert_rejects(lambda: EncodedRows(torch.zeros(3, 2), miss, -cat), "cat")
    assert_rejects(lambda: EncodedRows(torch.zeros(3, 2), miss, cat[:2]), ["num", "cat"])
    assert_rejects(lambda: EncodedRows(torch.zeros(3), miss, cat), "num")


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from icml26.testing.strategies import bad_tensors, out_of_range  # noqa: E402

DRAWS = settings(max_examples=30, deadline=None)


@DRAWS
@given(bad=bad_tensors((3,)), which=st.integers(0, 3))
def test_elbo_terms_of_every_bad_kind_are_named(bad, which):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows, in any term."""
    terms = [torch.zeros(3) for _ in range(4)]
    terms[which] = bad
    names = ("loglik_target", "loglik_context", "kl_target", "kl_context")
    assert_rejects(lambda: elbo_terms(*terms), names[which])


@DRAWS
@given(beta=out_of_range(0.0, None))
def test_every_bad_beta_is_named(beta):
    terms = [torch.zeros(3) for _ in range(4)]
    assert_rejects(lambda: elbo_terms(*terms, beta=beta), "beta")
