"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pandas as pd
import pytest
import torch

from icml26.lipopu import (
    AMINO_ACIDS,
    DESCRIPTORS,
    PocketAttentionMIL,
    load_slipp,
    scar_labels,
)
from icml26.testing import assert_rejects

RETURNED = {
    "FitResult": "fit returns it",
    "MILOutput": "the model returns it",
    "PocketPrediction": "score_pockets returns it",
    "Split": "grouped_split returns it",
}
"""Public names a user receives rather than builds (records the package returns): no input."""


def _table(ligands):
    g = np.random.default_rng(0)
    n = len(ligands)
    frame = pd.DataFrame(g.normal(size=(n, len(DESCRIPTORS))), columns=list(DESCRIPTORS))
    for a in AMINO_ACIDS:
        frame[a] = g.integers(0, 4, n)
    frame["pdb"] = [f"CLR/pdb1AB{i}.pdb" for i in range(n)]
    frame["lig"] = ligands
    return frame


def test_a_table_without_any_lipid_pocket_is_refused_when_loaded(tmp_path):
    _table(["none", "COA", "ATP"]).to_csv(tmp_path / "t.csv", index=False)
    assert_rejects(lambda: load_slipp(tmp_path / "t.csv"), "lig")


@pytest.mark.parametrize("y", [np.array([0, 1, 2]), np.array([0, 5, 1]), np.array([0.5, 1.0])])
def test_scar_labels_wants_zero_one_labels(y):
    assert_rejects(lambda: scar_labels(y, 0.5, seed=0), "y")


@pytest.fixture(scope="module")
def model():
    return PocketAttentionMIL().eval()


def test_nan_descriptors_are_refused_not_scored(model):
    residues = torch.zeros(2, 4, dtype=torch.long)
    descriptors = torch.zeros(2, len(DESCRIPTORS))
    descriptors[1, 3] = float("nan")
    assert_rejects(lambda: model(residues, descriptors), "descriptors")


@pytest.mark.parametrize("bad", [25, -2])
def test_residue_types_outside_the_alphabet_are_named(model, bad):
    residues = torch.zeros(1, 4, dtype=torch.long)
    residues[0, 1] = bad
    assert_rejects(lambda: model(residues, torch.zeros(1, len(DESCRIPTORS))), "residues")
