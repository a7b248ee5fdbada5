"""Backbones from structure files."""

import gzip

import pytest
import torch

from icml26.fidia.data import (
    decode,
    encode,
    example_backbone,
    examples_dir,
    ideal_helix,
    load_backbone,
)


def test_sequence_round_trip_and_bad_letters():
    assert decode(encode("ACDXY")) == "ACDXY"
    with pytest.raises(ValueError, match="outside"):
        encode("ACB")


def test_helix_is_a_valid_backbone():
    bb = ideal_helix(12)
    assert bb.X.shape == (12, 4, 3) and len(bb) == 12
    ca = bb.X[:, 1]
    assert 3.6 < float(torch.dist(ca[0], ca[1])) < 4.0  # consecutive CA atoms 3.8 A apart
    with pytest.raises(ValueError, match="length"):
        ideal_helix(2)


@pytest.mark.skipif(examples_dir() is None, reason="mdanalysistests not installed")
def test_example_backbones_and_their_disulfides():
    bpti = example_backbone("5pti")
    assert len(bpti) == 58 and bpti.sequence.startswith("RPDFCLEPPYTGPCKAR")
    assert bpti.disulfides == ((4, 54), (13, 37), (29, 50))  # Cys5-55, 14-38, 30-51
    assert bpti.index(15) == 14 and bpti.sequence[bpti.index(15)] == "K"
    cobro = example_backbone("cobrotoxin")
    assert len(cobro.disulfides) == 4
    with pytest.raises(ValueError, match="not in"):
        bpti.index(500)
    with pytest.raises(ValueError, match="unknown example"):
        example_backbone("1ubq")


PDB = """\
ATOM      1  N   GLY A   1       0.000   0.000   0.000  1.00  0.00           N
ATOM      2  CA  GLY A   1       1.458   0.000   0.000  1.00  0.00           C
ATOM      3  C   GLY A   1       2.009   1.420   0.000  1.00  0.00           C
ATOM      4  O   GLY A   1       1.251   2.390   0.000  1.00  0.00           O
ATOM      5  N   MSE A   2       3.332   1.536   0.000  1.00  0.00           N
ATOM      6  CA  MSE A   2       3.970   2.845   0.000  1.00  0.00           C
ATOM      7  C   MSE A   2       5.485   2.693   0.000  1.00  0.00           C
ATOM      8  O   MSE A   2       6.008   1.578   0.000  1.00  0.00           O
ATOM      9  N   ALA A   3       6.100   3.800   0.000  1.00  0.00           N
ATOM     10  CA  ALA A   3       7.500   3.900   0.000  1.00  0.00           C
END
"""


def test_load_backbone_drops_incomplete_residues_and_reads_gzip(tmp_path):
    path = tmp_path / "tiny.pdb.gz"
    path.write_bytes(gzip.compress(PDB.encode()))
    bb = load_backbone(path)
    assert bb.sequence == "GM" and bb.res_ids == (1, 2)  # ALA 3 lacks C and O; MSE reads as M
    assert bb.residue_idx.tolist() == [0, 1]


def test_a_numbering_gap_stays_a_jump_in_the_index_and_chains_are_100_apart(tmp_path):
    lines = [ln for ln in PDB.splitlines() if ln.startswith("ATOM")][:8]
    gapped = [ln[:22] + ("   7" if ln[22:26].strip() == "2" else ln[22:26]) + ln[26:]
              for ln in lines]  # fmt: skip
    chain_b = [ln[:21] + "B" + ln[22:] for ln in lines]
    path = tmp_path / "gap.pdb"
    path.write_text("\n".join(gapped + chain_b) + "\nEND\n")
    bb = load_backbone(path)
    assert bb.res_ids == (1, 7, 1, 2)
    assert bb.residue_idx.tolist() == [0, 6, 107, 108]
    assert bb.chain_encoding.tolist() == [1, 1, 2, 2]
    assert load_backbone(path, chains="B").residue_idx.tolist() == [0, 1]
    with pytest.raises(ValueError, match="no amino-acid chain"):
        load_backbone(path, chains="C")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("x.pdb", None, "no structure file"),
        ("x.xyz", "1\n", "unknown structure format"),
        ("x.cif", "data_x\nloop_\n_atom_site.id\n", "cannot read"),
        ("x.pdb", "HETATM    1  O   HOH A   1       0.000   0.000   0.000  1.00  0.00\n",
         "no amino-acid"),
    ],
)  # fmt: skip
def test_bad_files_raise(tmp_path, name, content, message):
    path = tmp_path / name
    if content is not None:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        load_backbone(path)
