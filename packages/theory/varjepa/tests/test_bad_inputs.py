"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.testing import assert_rejects
from icml26.varjepa import FeatureTokenizer, elbo_terms

RETURNED = {
    "EncodedRows": "FeatureTokenizer.encode returns it",
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
