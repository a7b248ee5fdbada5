"""The SLiPP loader, grouped splits, SCAR labels, composition bags, the synthetic cohort."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from icml26.lipopu import (
    AMINO_ACIDS,
    DESCRIPTORS,
    Standardiser,
    composition_bags,
    find_slipp,
    grouped_split,
    load_slipp,
    scar_labels,
    synthetic_cohort,
)
from icml26.lipopu.model import PAD


def _table(n=6):
    g = np.random.default_rng(0)
    frame = pd.DataFrame(g.normal(size=(n, len(DESCRIPTORS))), columns=list(DESCRIPTORS))
    for a in AMINO_ACIDS:
        frame[a] = g.integers(0, 4, n)
    frame["pdb"] = [f"CLR/pdb1AB{i % 3}.pdb" for i in range(n)]
    frame["lig"] = ["CLR", "none", "PLM", "COA", "none", "STE"][:n]
    return frame


def test_copies_of_one_pocket_in_two_ligand_folders_merge(tmp_path):
    frame = _table()
    copy = frame.iloc[[0]].assign(pdb="PLM/pdb1AB0.pdb", lig="none", pock_vol=1.0)
    twin = frame.iloc[[0]].assign(lig="none")  # same folder: a homodimer's twin pocket
    pd.concat([frame, copy, twin]).to_csv(tmp_path / "t.csv", index=False)
    t = load_slipp(tmp_path / "t.csv")
    assert len(t) == 7 and "1 cross-folder copies merged" in t.source
    assert t.lipid.tolist() == [1, 0, 1, 0, 0, 1, 0]
    assert t.fingerprint() == load_slipp(tmp_path / "t.csv").fingerprint()
    assert t.fingerprint() != t.subset(np.arange(6)).fingerprint()


def test_composition_twins():
    comp = np.array([[8] + [0] * 19, [8] + [0] * 19, [2] + [0] * 19, [2] + [0] * 19])
    from icml26.lipopu.data import composition_twins

    twins = composition_twins(comp, np.array([0, 2]), np.array([1, 3]), min_residues=8)
    assert twins.tolist() == [True, False]  # the small pocket is too small to call a twin


def test_loader_reads_a_table_with_slipp_columns(tmp_path):
    _table().to_csv(tmp_path / "t.csv")
    t = load_slipp(tmp_path / "t.csv")
    assert t.descriptors.shape == (6, 17) and t.composition.shape == (6, 20)
    assert t.lipid.tolist() == [1, 0, 1, 0, 0, 1]
    assert t.category.tolist() == [[1, 0], [0, 0], [0, 1], [0, 0], [0, 0], [0, 1]]
    assert set(t.protein) == {"1AB0", "1AB1", "1AB2"}  # the PDB code, not the ligand folder


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda f: f.drop(columns=["flex"]), r"missing column\(s\) \['flex'\]"),
        (
            lambda f: f.assign(pock_vol=["12", "x", "3", "4", "5", "6"]),
            r"line 3: column 'pock_vol' must be a finite number, got 'x'",
        ),
        (lambda f: f.assign(LEU=[1, 2, -1, 0, 0, 0]), r"line 4: residue count 'LEU'"),
        (lambda f: f.iloc[:0], "no rows"),
    ],
)
def test_loader_rejects_malformed_tables_naming_column_and_line(tmp_path, edit, message):
    edit(_table()).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(ValueError, match=message):
        load_slipp(tmp_path / "bad.csv")


def test_loader_names_a_missing_file(tmp_path):
    with pytest.raises(ValueError, match="no such file"):
        load_slipp(tmp_path / "nope.csv")


# the workspace keeps the table beside the repository (shared/data/slipp/), not in it
_UP = Path(__file__).resolve().parents
WORKSPACE_SLIPP = _UP[5] / "shared/data/slipp/training_pockets.csv" if len(_UP) > 5 else Path()


def test_real_slipp_table_when_present():
    path = find_slipp() or (
        WORKSPACE_SLIPP if WORKSPACE_SLIPP and WORKSPACE_SLIPP.is_file() else None
    )
    if path is None:
        pytest.skip("the SLiPP table is not on this machine")
    t = load_slipp(path)
    # 15,219 rows, 92 of them copies of one pocket filed under a second ligand folder
    assert len(t) == 15127 and "92 cross-folder copies merged" in t.source
    assert t.lipid.sum() == 1923 and t.category.sum(0).tolist() == [358, 1565]


def test_grouped_split_never_shares_a_protein():
    t = synthetic_cohort(n_proteins=50, seed=1)
    s = grouped_split(t.protein, seed=3)
    parts = [set(t.protein[i]) for i in (s.train, s.val, s.test)]
    assert not (parts[0] & parts[1] or parts[0] & parts[2] or parts[1] & parts[2])
    assert sorted(np.concatenate([s.train, s.val, s.test]).tolist()) == list(range(len(t)))
    assert len(s.train) > 4 * len(s.test) > 0 and len(s.train) > 4 * len(s.val) > 0  # 80/10/10
    with pytest.raises(ValueError, match="fractions"):
        grouped_split(t.protein, 0, (0.5, 0.5, 0.5))


def test_scar_keeps_a_fraction_of_positives_only():
    y = np.array([1, 0] * 5000)
    o = scar_labels(y, 0.25, seed=0)
    assert o[y == 0].sum() == 0
    assert abs(o[y == 1].mean() - 0.25) < 0.03
    assert (scar_labels(y, 1.0, 0) == y).all()
    with pytest.raises(ValueError, match=r"in \(0, 1\]"):
        scar_labels(y, 0.0, 0)


def test_composition_bags_and_subsampling():
    counts = np.array([[2, 0, 1] + [0] * 17, [0] * 20, [0] * 19 + [3]])
    bags = composition_bags(counts)
    assert bags.shape == (3, 3)
    assert bags[0].tolist() == [0, 0, 2] and (bags[1] == PAD).all() and bags[2].tolist() == [19] * 3
    g = np.random.default_rng(0)
    sub = composition_bags(np.tile(counts[:1] * 10, (200, 1)), keep=np.full(200, 0.5), rng=g)
    kept = (sub >= 0).sum(1)
    assert 10 < kept.mean() < 20 and kept.min() >= 1


def test_synthetic_cohort_has_slipp_shape():
    t = synthetic_cohort(n_proteins=100, seed=0)
    assert t.descriptors.shape == (800, 17) and 0.05 < t.lipid.mean() < 0.25
    assert t.category[:, 0].sum() > 0 and t.category[:, 1].sum() > 0


def test_standardiser_imputes_missing_descriptors_with_the_median():
    X = np.random.default_rng(0).lognormal(size=(100, 17)) * 100
    std = Standardiser.fit(X)
    Z = std(X)
    assert np.abs(np.median(Z, 0)).max() < 1e-6
    row = X[:1].copy()
    row[0, 3] = np.nan
    assert std(row)[0, 3] == 0.0
    assert Standardiser.from_state(std.state())(X).tolist() == Z.tolist()
