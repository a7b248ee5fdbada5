"""Pockets of real structures: biotite reads the file, fpocket-rs finds the pockets, residue bags.

``read_structure`` reads PDB, PDBx/mmCIF or BinaryCIF (optionally gzip / bz2 compressed) with
biotite and keeps the protein's heavy atoms (first model; ligands, waters and hydrogens dropped,
so pockets are found on the apo protein). ``pockets`` runs fpocket-rs (a Rust port of fpocket,
Le Guilloux et al. 2009) and renames its descriptors to SLiPP's columns. ``residue_bag`` lists the
residues lining a pocket: those with a heavy atom within ``radius`` angstrom of one of its alpha
sphere centres (or, with no radius, the residues fpocket-rs reports).
"""

from __future__ import annotations

import bz2
import gzip
import io
import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import biotite.structure as struc
import numpy as np

from icml26.lipopu.data import DESCRIPTORS
from icml26.lipopu.model import AMINO_ACIDS, UNKNOWN_RESIDUE

FPOCKET_TO_SLIPP = {
    "volume": "pock_vol",
    "n_alpha_spheres": "nb_AS",
    "mean_alpha_radius": "mean_as_ray",
    "mean_alpha_solvent_access": "mean_as_solv_acc",
    "apolar_alpha_sphere_proportion": "apol_as_prop",
    "mean_local_hydrophobic_density": "mean_loc_hyd_dens",
    "hydrophobicity_score": "hydrophobicity_score",
    "volume_score": "volume_score",
    "polarity_score": "polarity_score",
    "charge_score": "charge_score",
    "flexibility": "flex",
    "prop_polar_atoms": "prop_polar_atm",
    "alpha_sphere_density": "as_density",
    "as_max_dist": "as_max_dst",
    "polar_sasa": "surf_pol_vdw14",
    "apolar_sasa": "surf_apol_vdw14",
    "total_sasa": "surf_vdw14",
}
"""fpocket-rs descriptor names -> SLiPP's columns (the renaming SLiPP applies to fpocket's)."""
RESCALED = ("surf_pol_vdw14", "surf_apol_vdw14", "surf_vdw14")
"""SASA terms fpocket-rs reports on another scale than the fpocket program SLiPP used (about
twice SLiPP's values); ``DescriptorMap`` rescales them. ``flex`` is mapped in ``pockets``:
fpocket-rs gives the pocket atoms' raw mean B-factor, SLiPP's column is that B-factor min-max
normalised over the protein's atoms (0-1)."""
_FORMATS = (".pdb", ".ent", ".cif", ".pdbx", ".mmcif", ".bcif")
MODIFIED = {"MSE": "MET", "SEP": "SER", "TPO": "THR", "PTR": "TYR", "CSO": "CYS", "CME": "CYS",
            "CSD": "CYS", "HYP": "PRO", "MLY": "LYS", "M3L": "LYS", "KCX": "LYS", "LLP": "LYS",
            "PCA": "GLU", "SEC": "CYS"}  # fmt: skip
"""Common modified residues and the standard residue each stands for."""


def read_structure(path: str | os.PathLike, *, protein_only: bool = True) -> struc.AtomArray:
    """The protein heavy atoms of the first model of a PDB / mmCIF / BinaryCIF file, with their
    B-factors (``protein_only=False``: every atom, ligands and waters included).

    ``.gz`` and ``.bz2`` files are decompressed first. Raises ValueError when the file is
    missing, of an unknown format, unreadable, or holds no amino-acid residue.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"structure file {path} does not exist")
    suffixes = [s.lower() for s in path.suffixes]
    opener = {".gz": gzip.open, ".bz2": bz2.open}.get(suffixes[-1] if suffixes else "")
    fmt = suffixes[-2] if opener and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if fmt not in _FORMATS:
        raise ValueError(
            f"{path}: unknown structure format {fmt or '(none)'!r}; expected one of {_FORMATS} "
            "(optionally .gz or .bz2)"
        )
    raw = (opener or open)(path, "rb").read()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # biotite warns when it guesses missing elements
            atoms = _parse(raw, fmt)
    except Exception as e:  # biotite raises many kinds on malformed files
        raise ValueError(f"{path}: could not read the structure ({type(e).__name__}: {e})") from e
    if not protein_only:
        return atoms
    # filter_amino_acids keeps modified residues (MSE, ...) that a HETATM filter would punch
    # out of the chain as spurious holes
    keep = struc.filter_amino_acids(atoms) & (atoms.element != "H")
    atoms = atoms[keep]
    if atoms.array_length() == 0:
        raise ValueError(f"{path}: no amino-acid residues (is it a protein structure?)")
    return atoms


def _parse(raw: bytes, fmt: str) -> struc.AtomArray:
    if fmt in (".pdb", ".ent"):
        from biotite.structure.io.pdb import PDBFile

        return PDBFile.read(io.StringIO(raw.decode())).get_structure(
            model=1, extra_fields=["b_factor"]
        )
    if fmt == ".bcif":
        from biotite.structure.io.pdbx import BinaryCIFFile, get_structure

        return get_structure(
            BinaryCIFFile.read(io.BytesIO(raw)), model=1, extra_fields=["b_factor"]
        )
    from biotite.structure.io.pdbx import CIFFile, get_structure

    return get_structure(
        CIFFile.read(io.StringIO(raw.decode())), model=1, extra_fields=["b_factor"]
    )


def _pdb_text(atoms: struc.AtomArray) -> str:
    from biotite.structure.io.pdb import PDBFile

    # fpocket-rs reads PDB text, whose columns hold one-character chains and 4-digit numbers
    long_chains = sorted({str(c) for c in atoms.chain_id if len(str(c)) > 1})
    if long_chains or atoms.res_id.max(initial=0) > 9999 or atoms.res_id.min(initial=0) < -999:
        raise ValueError(
            "the structure does not fit the PDB format fpocket-rs reads (chain IDs "
            f"{long_chains[:3] or 'of one character'}, residue numbers -999..9999): select or "
            "rename chains (biotite: atoms[atoms.chain_id == 'A']) first"
        )
    f = PDBFile()
    f.set_structure(atoms)
    buffer = io.StringIO()
    f.write(buffer)
    return buffer.getvalue()


@dataclass(frozen=True)
class Pocket:
    """One fpocket-rs pocket: its rank and score, SLiPP-named ``descriptors``, the lining
    ``residues`` fpocket-rs reports as (chain, residue number) and ``spheres`` (M, 4): alpha
    sphere centres x, y, z and radii."""

    rank: int
    score: float
    drug_score: float
    descriptors: dict[str, float]
    residues: tuple[tuple[str, int], ...]
    spheres: np.ndarray

    @property
    def center(self) -> np.ndarray:
        return self.spheres[:, :3].mean(0)


def pockets(structure: str | os.PathLike | struc.AtomArray, **fpocket_options) -> list[Pocket]:
    """fpocket-rs pockets of a structure (a file or biotite AtomArray), ranked by its score.

    ``fpocket_options`` go to ``fpocket_rs.detect_pockets`` (min_radius, max_radius, ...).
    """
    import fpocket_rs

    atoms = structure if isinstance(structure, struc.AtomArray) else read_structure(structure)
    found = fpocket_rs.detect_pockets(_pdb_text(atoms), **fpocket_options)
    b = atoms.b_factor if "b_factor" in atoms.get_annotation_categories() else np.zeros(1)
    b_low, b_span = float(np.min(b)), float(np.ptp(b))
    out = []
    for p in found["pockets"]:
        descriptors = {slipp: float(p[name]) for name, slipp in FPOCKET_TO_SLIPP.items()}
        # SLiPP's flex is the pocket's mean B-factor min-max normalised over the protein; a
        # structure without B-factors (a model, an MD frame) has no flexibility to report: NaN,
        # which the model's standardiser reads as the training median
        descriptors["flex"] = (descriptors["flex"] - b_low) / b_span if b_span > 0 else float("nan")
        residues = tuple((str(c), int(r)) for c, r in p["residues"])
        spheres = np.asarray(p["alpha_spheres"], dtype=float).reshape(-1, 4)
        out.append(
            Pocket(
                int(p["rank"]),
                float(p["score"]),
                float(p["drug_score"]),
                descriptors,
                residues,
                spheres,
            )
        )
    return sorted(out, key=lambda q: q.rank)


@dataclass(frozen=True)
class ResidueBag:
    """The residues lining a pocket: ``chain``, ``res_id``, ``res_name`` (L,) and ``types`` (L,)
    residue-type indices (``AMINO_ACIDS`` order; 20 for any other residue)."""

    chain: np.ndarray
    res_id: np.ndarray
    res_name: np.ndarray
    types: np.ndarray

    def __len__(self) -> int:
        return len(self.types)

    def labels(self) -> list[str]:
        return [
            f"{n}{i}{':' + c if c else ''}"
            for c, i, n in zip(self.chain, self.res_id, self.res_name, strict=True)
        ]


def residue_bag(
    structure: str | os.PathLike | struc.AtomArray, pocket: Pocket, radius: float | None = None
) -> ResidueBag:
    """The residues of ``structure`` lining ``pocket``.

    With ``radius`` (angstrom; the training perturbation draws it from {4, 6, 8}), a residue
    belongs to the bag when one of its heavy atoms lies within ``radius`` of an alpha-sphere
    centre; with ``radius=None``, the bag is the residue list fpocket-rs reports.
    """
    atoms = structure if isinstance(structure, struc.AtomArray) else read_structure(structure)
    if radius is None:
        # residues are matched by (chain, number); insertion codes are not told apart
        keys = np.char.add(np.char.add(atoms.chain_id.astype(str), ":"),
                           atoms.res_id.astype(str))  # fmt: skip
        wanted = [f"{c}:{r}" for c, r in pocket.residues]
        hit = np.isin(keys, wanted)
    else:
        if not radius > 0:
            raise ValueError(f"radius must be > 0 angstrom, got {radius}")
        cells = struc.CellList(atoms, cell_size=max(radius, 4.0))
        near = cells.get_atoms(pocket.spheres[:, :3], radius)  # (M, k) atom indices, -1 padded
        hit = np.zeros(atoms.array_length(), dtype=bool)
        hit[near[near >= 0]] = True
    picked = atoms[hit]
    starts = struc.get_residue_starts(picked) if picked.array_length() else np.zeros(0, int)
    names = picked.res_name[starts] if len(starts) else np.zeros(0, dtype=str)
    index = {a: i for i, a in enumerate(AMINO_ACIDS)}
    # a modified residue counts as its parent; anything else is type 20 (unknown), which a model
    # trained on SLiPP's 20 residue counts has never seen
    parent = [MODIFIED.get(str(n), str(n)) for n in names]
    types = np.array([index.get(n, UNKNOWN_RESIDUE) for n in parent], dtype=np.int64)
    return ResidueBag(
        np.asarray(picked.chain_id[starts]) if len(starts) else np.zeros(0, dtype=str),
        np.asarray(picked.res_id[starts]) if len(starts) else np.zeros(0, dtype=int),
        np.asarray(names),
        types,
    )


@dataclass(frozen=True)
class DescriptorMap:
    """Rescales fpocket-rs's SASA terms to the fpocket program's scale SLiPP was built with.

    ``scale[name]``: the ratio of medians, training pockets over fpocket-rs pockets, for each
    descriptor in ``RESCALED`` (about 0.46 on the example structures; see the README);
    every other descriptor passes unchanged.
    """

    scale: dict[str, float]

    def __post_init__(self):
        bad = {k: v for k, v in dict(self.scale).items() if k not in RESCALED}
        if bad:
            raise ValueError(f"scale: only {RESCALED} are rescaled, got {sorted(bad)}")
        factors = self.scale.values()
        if not all(isinstance(v, int | float) and 0 < v < float("inf") for v in factors):
            raise ValueError(f"scale factors must be positive numbers, got {self.scale}")

    @classmethod
    def fit(cls, fpocket_rows: np.ndarray, training_rows: np.ndarray) -> DescriptorMap:
        """``fpocket_rows`` (n, 17) descriptors of fpocket-rs pockets, ``training_rows`` (m, 17)
        of the training table, both in ``DESCRIPTORS`` order."""
        scale = {}
        for name in RESCALED:
            j = DESCRIPTORS.index(name)
            src, dst = np.nanmedian(fpocket_rows[:, j]), np.nanmedian(training_rows[:, j])
            scale[name] = float(dst / src) if src > 0 else 1.0
        return cls(scale)

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        rows = np.array(rows, dtype=float, copy=True)
        if rows.ndim != 2 or rows.shape[1] != len(DESCRIPTORS):
            raise ValueError(f"rows must be (n, {len(DESCRIPTORS)}) descriptors, got {rows.shape}")
        for name, factor in self.scale.items():
            rows[:, DESCRIPTORS.index(name)] *= factor
        return rows

    def state(self) -> dict:
        return {"scale": self.scale}


def ligand_overlap(
    structure_file: str | os.PathLike, found: list[Pocket], ligand: str, cutoff: float = 3.0
) -> np.ndarray:
    """For each pocket, the fraction of its alpha-sphere centres within ``cutoff`` angstrom of
    a heavy atom of residue ``ligand`` (e.g. "STR") in the file: 0 = elsewhere, 1 = inside it."""
    atoms = read_structure(structure_file, protein_only=False)
    lig = atoms[(atoms.res_name == ligand.upper()) & (atoms.element != "H")]
    if lig.array_length() == 0:
        raise ValueError(f"{structure_file}: no residue named {ligand!r}")
    cells = struc.CellList(lig, cell_size=cutoff)
    return np.array(
        [float((cells.get_atoms(p.spheres[:, :3], cutoff) >= 0).any(axis=1).mean()) for p in found]
    )


def descriptor_rows(found: list[Pocket]) -> np.ndarray:
    """(n, 17) descriptors of ``pockets`` in ``DESCRIPTORS`` order."""
    return np.array([[p.descriptors[d] for d in DESCRIPTORS] for p in found], dtype=float).reshape(
        -1, len(DESCRIPTORS)
    )
