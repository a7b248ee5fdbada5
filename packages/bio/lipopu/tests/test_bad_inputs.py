"""Bad input at the public API ends in a ValueError / TypeError that names the argument."""

import numpy as np
import pandas as pd
import pytest
import torch

import icml26.lipopu as L
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


def test_descriptors_of_another_dtype_than_the_weights_are_named(model):
    residues = torch.zeros(2, 4, dtype=torch.long)
    descriptors = torch.zeros(2, len(DESCRIPTORS), dtype=torch.float64)
    assert_rejects(lambda: model(residues, descriptors), ["descriptors", "float64"])


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


def _junk(tmp_path):
    path = tmp_path / "junk.pdb"
    path.write_text("not a structure\n")
    return path


@pytest.mark.parametrize(
    ("call", "names"),
    [
        (lambda: L.CompositionBags(np.ones((3, 20), int), keep_min=0), "keep_min"),
        (lambda: L.CompositionBags(-np.ones((3, 20), int)), "negative"),
        (lambda: L.composition_bags(np.ones((3, 7), int)), "composition"),
        (lambda: L.composition_bags(np.full((3, 20), 0.5)), "whole"),
        (lambda: L.composition_bags(np.ones((2, 20), int), keep=np.array([0.5, 0.0])), "keep"),
        (lambda: L.StructureBags([]), "variants"),
        (lambda: L.Standardiser.fit(np.ones(5)), "descriptors"),
        (lambda: L.grouped_split(np.array([0, 1]), 0), "proteins"),
        (lambda: L.synthetic_cohort(10.5), "n_proteins"),
        (lambda: L.synthetic_cohort(2), "n_proteins"),
        (lambda: L.PocketModelConfig(dropout=1.0), "dropout"),
        (lambda: L.TrainConfig(lr=0), "lr"),
        (lambda: L.DescriptorMap({"pock_vol": 0.5}), "scale"),
        (lambda: L.DescriptorMap({"surf_vdw14": -1.0}), "scale"),
        (lambda: L.DescriptorMap({})(np.ones((2, 3))), "rows"),
    ],
)
def test_data_and_configs_name_their_bad_values(call, names):
    assert_rejects(call, names)


def test_risks_name_bad_scores_labels_priors_and_objectives():
    z, nan = torch.zeros(3), torch.tensor([0.0, float("nan")])
    assert_rejects(lambda: L.bce_risk(nan, torch.ones(2)), "scores")
    assert_rejects(lambda: L.bce_risk(z, torch.tensor([0.0, 2.0, 1.0])), "observed")
    assert_rejects(lambda: L.nnpu_risk(z, z, 1.5), "prior")
    assert_rejects(lambda: L.upu_risk(z, z, 0.5, loss="hinge"), "loss")
    assert_rejects(lambda: L.pu_auc_risk(torch.zeros(0), z), "scores_p")
    assert_rejects(lambda: L.lipopu_risk(torch.zeros(1), z, 0.3), "scores_p")
    assert_rejects(lambda: L.pu_objective("bogus", z, z, z, 0.3), "objective")
    one = torch.zeros(3, 1)
    assert_rejects(lambda: L.multilabel_objective("nnpu", z, z, one, one, [0.3]), "scores_p")
    assert_rejects(lambda: L.multilabel_objective("nnpu", one, one, one, one, [0.3, 0.2]), "priors")
    assert_rejects(lambda: L.protein_score(z, torch.tensor([0, -1, 0])), "protein")
    assert_rejects(lambda: L.protein_score(z, torch.zeros(3)), "protein")
    assert isinstance(L.PURisk(z, z, z), tuple)  # a record the risks return


def test_structures_checkpoints_and_fits_name_what_is_wrong(tmp_path, monkeypatch):
    junk = _junk(tmp_path)
    pocket = L.Pocket(1, 1.0, 0.5, {d: 1.0 for d in DESCRIPTORS}, (("A", 1),), np.zeros((2, 4)))
    for call in (
        lambda: L.read_structure(junk),
        lambda: L.pockets(junk),
        lambda: L.residue_bag(junk, pocket),
        lambda: L.ligand_overlap(junk, [pocket], "STR"),
    ):
        assert_rejects(call, "junk.pdb")
    assert_rejects(lambda: L.read_structure(tmp_path / "missing.pdb"), "does not exist")
    assert_rejects(lambda: L.load_predictor(tmp_path / "none"), "config.json")
    assert_rejects(lambda: L.predict(junk, tmp_path / "none"), "config.json")
    assert_rejects(lambda: L.save_predictor(tmp_path / "out", "model", None), "model")
    model = PocketAttentionMIL()
    assert_rejects(lambda: L.save_predictor(tmp_path / "out", model, {}), "standardiser")
    bags = L.CompositionBags(np.ones((4, 20), int))
    assert_rejects(lambda: L.predict_scores(model, np.ones(4), bags), "descriptors")
    args = (np.ones((4, len(DESCRIPTORS))), bags, np.array([0, 1, 0, 0]), np.arange(3))
    assert_rejects(lambda: L.fit(model, *args, np.arange(3, 4), L.TrainConfig(epochs=1), 0.3),
                   "positives")  # fmt: skip
    monkeypatch.delenv("LIPOPU_SLIPP", raising=False)
    assert L.find_slipp() is None  # "none given" is an answer, not an error
    residues = L.ResidueBag(np.array(["A"]), np.array([1]), np.array(["ALA"]), np.array([0]))
    assert residues.labels() == ["ALA1:A"]  # a record residue_bag returns


def test_the_model_names_a_config_of_the_wrong_kind_and_a_garbled_one(tmp_path):
    from icml26.lipopu import PocketAttentionMIL

    assert_rejects(lambda: PocketAttentionMIL("x"), "PocketModelConfig")
    folder = tmp_path
    (folder / "config.json").write_text("{not json")  # a garbled config
    (folder / "model.safetensors").write_bytes(b"")
    assert_rejects(lambda: PocketAttentionMIL.from_pretrained(folder), "config.json")


def test_a_pocket_table_names_missing_descriptors_and_bad_counts():
    from icml26.lipopu import PocketTable

    def table(descriptors=None, composition=None):
        d = np.zeros((3, 17)) if descriptors is None else descriptors
        c = np.zeros((3, 20), dtype=np.int64) if composition is None else composition
        return PocketTable(d, c, np.array(["1abc"] * 3), np.array(["CLR", "none", "none"]))

    table()  # a well-formed table builds
    nan = np.zeros((3, 17))
    nan[1, 4] = np.nan
    assert_rejects(lambda: table(descriptors=nan), ["descriptors", "NaN"])
    assert_rejects(lambda: table(descriptors=np.zeros((3, 5))), "descriptors")
    assert_rejects(lambda: table(composition=-np.ones((3, 20))), "composition")


from hypothesis import given, settings  # noqa: E402

from icml26.testing.strategies import bad_tensors  # noqa: E402


@settings(max_examples=30, deadline=None)
@given(descriptors=bad_tensors((2, len(DESCRIPTORS))))
def test_descriptors_of_every_bad_kind_are_named(model, descriptors):
    """NaN / inf, a wrong rank, integer, boolean or complex values, or no rows."""
    residues = torch.zeros(2, 4, dtype=torch.long)
    assert_rejects(lambda: model(residues, descriptors), "descriptors")
