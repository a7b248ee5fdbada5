"""Tables in, tokens out: numerical and categorical columns, missing values, unseen categories."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.varjepa import FeatureEmbedding, FeatureTokenizer


def _frame():
    return pd.DataFrame(
        {
            "age": [20.0, 30.0, np.nan, 50.0, 40.0],
            "income": [1.0, 2.0, 3.0, 4.0, 5.0],
            "city": ["b", "a", None, "c", "a"],
            "plan": pd.Categorical(["x", "y", "x", "x", "y"]),
        }
    )


def test_columns_are_split_and_standardised():
    tok = FeatureTokenizer().fit(_frame())
    assert tok.numerical_ == ["age", "income"] and tok.categorical_ == ["city", "plan"]
    assert tok.cardinalities == [3, 2] and tok.n_features == 4
    rows = tok.transform(_frame())
    assert rows.num.dtype == torch.float32 and rows.cat.dtype == torch.int64
    inc = rows.num[:, 1].double()
    assert abs(inc.mean().item()) < 1e-6 and abs(inc.std(unbiased=False).item() - 1) < 1e-6
    assert rows.cat[:, 0].tolist() == [2, 1, 0, 3, 1]  # sorted categories, 0 = missing


def test_categorical_codes_round_trip():
    frame = _frame()
    tok = FeatureTokenizer().fit(frame)
    back = tok.inverse_categories(tok.transform(frame).cat.numpy())
    assert back["city"].tolist() == ["b", "a", None, "c", "a"]
    assert back["plan"].tolist() == list(frame["plan"].astype(str))
    with pytest.raises(ValueError, match="codes must be in"):
        tok.inverse_categories(np.array([[4, 1]]))


def test_nan_in_a_numerical_column_is_flagged_and_zeroed():
    rows = FeatureTokenizer().fit(_frame()).transform(_frame())
    assert rows.num_missing[:, 0].tolist() == [False, False, True, False, False]
    assert rows.num[2, 0].item() == 0.0  # the training mean after standardising
    assert torch.isfinite(rows.num).all()
    emb = FeatureEmbedding(2, [3, 2], 8)
    tokens = emb(rows)
    assert tokens.shape == (5, 4, 8) and torch.isfinite(tokens).all()
    # the missing value's token is the column's missing vector, not the token of the value 0
    rows0 = FeatureTokenizer().fit(_frame()).transform(_frame().fillna({"age": 35.0}))
    assert rows0.num[2, 0].item() == 0.0 and not rows0.num_missing[2, 0]
    assert not torch.allclose(emb(rows0)[2, 0], tokens[2, 0])


def test_unseen_categories_raise_or_map_to_missing():
    tok = FeatureTokenizer().fit(_frame())
    new = _frame().assign(city=["a", "zzz", "b", "a", "a"])
    with pytest.raises(ValueError, match=r"column 'city'.*\['zzz'\].*handle_unknown='missing'"):
        tok.transform(new)
    lenient = FeatureTokenizer(handle_unknown="missing").fit(_frame())
    assert lenient.transform(new).cat[:, 0].tolist() == [1, 0, 2, 1, 1]


def test_arrays_state_and_bad_input():
    X = np.random.default_rng(0).normal(size=(10, 3))
    tok = FeatureTokenizer().fit(X)
    assert tok.numerical_ == ["x0", "x1", "x2"] and tok.categorical_ == []
    again = FeatureTokenizer.from_state(tok.state())
    assert torch.equal(again.transform(X).num, tok.transform(X).num)
    with pytest.raises(ValueError, match="3"):
        tok.transform(X[:, :2])
    with pytest.raises(ValueError, match="inf"):
        FeatureTokenizer().fit(np.array([[1.0, np.inf], [2.0, 3.0]]))
    with pytest.raises(ValueError, match="empty"):
        FeatureTokenizer().fit(np.zeros((0, 3)))
    with pytest.raises(ValueError, match="not in X"):
        FeatureTokenizer(categorical=["nope"]).fit(_frame())
    with pytest.raises(ValueError, match="lacks"):
        FeatureTokenizer().fit(_frame()).transform(_frame().drop(columns="city"))
    with pytest.raises(ValueError, match="handle_unknown"):
        FeatureTokenizer(handle_unknown="ignore")
    with pytest.raises(RuntimeError, match="not fitted"):
        FeatureTokenizer().transform(X)
