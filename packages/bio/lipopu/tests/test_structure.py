"""Real structures: biotite reads them, fpocket-rs finds 1a28's steroid pocket, residue bags."""

from pathlib import Path

import numpy as np
import pytest

from icml26.lipopu.structure import (
    DescriptorMap,
    descriptor_rows,
    ligand_overlap,
    pockets,
    read_structure,
    residue_bag,
)

MDA = pytest.importorskip("MDAnalysisTests")
DATA = Path(MDA.__file__).parent / "data"
P1A28 = DATA / "1a28.pdb.gz"


@pytest.fixture(scope="module")
def found():
    return pockets(P1A28)


def test_fpocket_rs_finds_a_pocket_contacting_the_steroid(found):
    import biotite.structure as struc

    overlap = ligand_overlap(P1A28, found, "STR")
    site = int(np.argmax(overlap))
    assert overlap[site] > 0.8
    atoms = read_structure(P1A28, protein_only=False)
    steroid = atoms[atoms.res_name == "STR"]
    bag = residue_bag(P1A28, found[site])
    protein = read_structure(P1A28)
    lining = np.isin(protein.res_id, bag.res_id) & np.isin(protein.chain_id, bag.chain)
    d = struc.distance(protein[lining].coord[:, None], steroid.coord[None]).min()
    assert d < 4.0  # a lining residue touches the steroid
    assert {"GLN725", "ARG766"} & {f"{n}{i}" for n, i in zip(bag.res_name, bag.res_id, strict=True)}


def test_residue_bags_grow_with_the_radius(found):
    sizes = [len(residue_bag(P1A28, found[0], r)) for r in (4.0, 6.0, 8.0)]
    assert 0 < sizes[0] <= sizes[1] <= sizes[2]
    with pytest.raises(ValueError, match="radius must be > 0"):
        residue_bag(P1A28, found[0], 0.0)


def test_descriptors_are_on_slipp_columns(found):
    rows = descriptor_rows(found)
    assert rows.shape == (len(found), 17) and np.isfinite(rows).all()
    assert 0 <= found[0].descriptors["flex"] <= 1  # B-factors min-max normalised
    dmap = DescriptorMap.fit(rows, rows * np.r_[np.ones(14), 0.5, 0.5, 0.5])
    assert dmap.scale == pytest.approx({k: 0.5 for k in dmap.scale})
    assert np.allclose(dmap(rows)[:, :14], rows[:, :14])


def test_read_structure_errors(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        read_structure(tmp_path / "x.pdb")
    (tmp_path / "x.xyz").write_text("1\n")
    with pytest.raises(ValueError, match="unknown structure format"):
        read_structure(tmp_path / "x.xyz")
    (tmp_path / "w.pdb").write_text(
        "HETATM    1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00           O\nEND\n"
    )
    with pytest.raises(ValueError, match="no amino-acid residues"):
        read_structure(tmp_path / "w.pdb")
    with pytest.raises(ValueError, match="no residue named"):
        ligand_overlap(tmp_path / "w.pdb", [], "STR")


def test_modified_residues_count_as_their_parent_and_long_chains_are_refused(found):
    atoms = read_structure(P1A28)
    met = atoms.res_name == "MET"
    mod = atoms.copy()
    mod.res_name[met] = "MSE"  # selenomethionine, as in many crystal structures
    pocket = next(p for p in found if "MET" in residue_bag(atoms, p, 6.0).res_name)
    a, b = residue_bag(atoms, pocket, 6.0), residue_bag(mod, pocket, 6.0)
    assert "MSE" in b.res_name and a.types.tolist() == b.types.tolist()
    long = atoms.copy()
    long.chain_id[:] = "AAA"
    with pytest.raises(ValueError, match="PDB format fpocket-rs reads"):
        pockets(long)
