"""Bundled tables load offline; a user's DataFrame or CSV becomes a Table; splits are clean."""

import numpy as np
import pandas as pd
import pytest

from icml26.varjepa import load_table, read_csv, split_table, table_from_frame
from icml26.varjepa.data import TABLES


@pytest.mark.parametrize("name", sorted(TABLES))
def test_bundled_tables_load(name):
    t = load_table(name)
    assert len(t.features) == len(t.target) > 100 and t.features.shape[1] >= 5
    assert "rownames" not in t.features.columns
    if t.task == "classification":
        assert t.target.dtype == np.int64 and 2 <= t.n_classes <= 10
    else:
        assert np.isfinite(t.target).all()


def test_mixed_tables_keep_their_categories_and_missing_values():
    churn = load_table("wa_churn")
    assert churn.features.shape == (7043, 19)
    assert churn.features["total_charges"].isna().sum() == 11
    assert not pd.api.types.is_numeric_dtype(churn.features["contract"])
    credit = load_table("credit_data")
    assert credit.features.isna().any().any()


def test_splits_are_disjoint_stratified_and_capped():
    t = load_table("wa_churn")
    s = split_table(t, seed=0, max_train=1000)
    parts = [set(s.train), set(s.val), set(s.test)]
    assert len(s.train) == 1000 and not (
        parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2]
    )
    share = t.target.mean()
    for idx in (s.train, s.val, s.test):
        assert abs(t.target[idx].mean() - share) < 0.01
    again = split_table(t, seed=0, max_train=1000)
    assert np.array_equal(again.test, s.test)
    assert not np.array_equal(split_table(t, seed=1).test, s.test)
    with pytest.raises(ValueError, match="fractions"):
        split_table(t, seed=0, val=0.6, test=0.5)


def test_user_frames_and_csvs(tmp_path):
    frame = pd.DataFrame(
        {"x": [1.0, 2.0, np.nan, 4.0], "c": ["a", "b", "a", None], "y": ["n", "y", "y", "n"]}
    )
    t = table_from_frame(frame, "y")
    assert (
        t.task == "classification"
        and list(t.target) == [0, 1, 1, 0]
        and list(t.features) == ["x", "c"]
    )
    assert table_from_frame(frame.assign(y=[0.5, 1.5, 2.25, 3.0]), "y").task == "regression"
    with pytest.raises(ValueError, match="not in the frame"):
        table_from_frame(frame, "label")
    with pytest.raises(ValueError, match="missing values"):
        table_from_frame(frame.assign(y=["n", None, "y", "n"]), "y")
    frame.to_csv(tmp_path / "t.csv", index=False)
    assert read_csv(tmp_path / "t.csv", "y").features.shape == (4, 2)
    with pytest.raises(ValueError, match="does not exist"):
        read_csv(tmp_path / "nope.csv", "y")
    with pytest.raises(ValueError, match="unknown table"):
        load_table("iris")
