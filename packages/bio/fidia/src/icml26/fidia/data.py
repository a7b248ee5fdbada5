"""Backbones: read a structure with biotite into the tensors ProteinMPNN takes.

A :class:`Backbone` is one or more protein chains as N, CA, C, O coordinates (L, 4, 3), the native
sequence in ProteinMPNN's alphabet, and ProteinMPNN's residue index and chain encoding (positions
numbered across chains with a jump of 100 at each chain break, as its own featuriser does).
``example_backbone`` finds the demo's structures in ``mdanalysistests`` (GPL data from PyPI, an
optional dependency, never shipped inside this package).
"""

from __future__ import annotations

import bz2
import dataclasses
import gzip
import hashlib
import io
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

ALPHABET = "ACDEFGHIKLMNPQRSTVWYX"
"""ProteinMPNN's 21 letters; index 20 (X) is unknown and is never sampled."""
THREE_TO_ONE = {
    "ALA": "A", "CYS": "C", "ASP": "D", "GLU": "E", "PHE": "F", "GLY": "G", "HIS": "H", "ILE": "I",
    "LYS": "K", "LEU": "L", "MET": "M", "ASN": "N", "PRO": "P", "GLN": "Q", "ARG": "R", "SER": "S",
    "THR": "T", "VAL": "V", "TRP": "W", "TYR": "Y",
    # modified residues read as their parent
    "MSE": "M", "SEC": "C", "HSD": "H", "HSE": "H", "HSP": "H", "HIE": "H", "HID": "H", "HIP": "H",
    "CYX": "C", "CYM": "C", "LYN": "K", "ASH": "D", "GLH": "E",
}  # fmt: skip
BACKBONE_ATOMS = ("N", "CA", "C", "O")

EXAMPLES = {
    "5pti": ("mmcif/5PTI.cif.gz", "A"),
    "cobrotoxin": ("cobrotoxin.pdb", None),
}
"""Demo structures in mdanalysistests: BPTI (58 residues, 3 disulfides) and cobrotoxin (62
residues, 4 disulfides)."""


@dataclass(frozen=True)
class Backbone:
    """A protein backbone as ProteinMPNN reads it.

    Attributes:
        name: a label (file stem and chain).
        X: (L, 4, 3) float32 coordinates of N, CA, C, O in Angstrom.
        native: (L,) int64 native residues in :data:`ALPHABET`.
        residue_idx: (L,) int64 positions, +100 at each chain break.
        chain_encoding: (L,) int64 chain numbers from 1.
        res_ids: the structure's own residue numbers, to name positions as a user knows them.
        disulfides: 0-based position pairs of cysteines whose SG atoms are bonded (< 2.5 A).
    """

    name: str
    X: torch.Tensor
    native: torch.Tensor
    residue_idx: torch.Tensor
    chain_encoding: torch.Tensor
    res_ids: tuple[int, ...]
    disulfides: tuple[tuple[int, int], ...] = ()

    def __post_init__(self):
        for field in ("X", "native", "residue_idx", "chain_encoding"):
            if not isinstance(getattr(self, field), torch.Tensor):
                raise TypeError(f"Backbone.{field} must be a torch tensor, got "
                                f"{type(getattr(self, field)).__name__}")  # fmt: skip
        L = self.X.shape[0]
        if self.X.ndim != 3 or self.X.shape[1:] != (4, 3):
            raise ValueError(f"Backbone.X must be (L, 4, 3), got {tuple(self.X.shape)}")
        if L == 0:
            raise ValueError("Backbone has no residues")
        if not torch.isfinite(self.X).all():
            raise ValueError(f"Backbone {self.name!r} has non-finite coordinates")
        for field in ("native", "residue_idx", "chain_encoding"):
            if getattr(self, field).shape != (L,):
                raise ValueError(f"Backbone.{field} must be ({L},)")
        if len(self.res_ids) != L:
            raise ValueError(f"Backbone.res_ids must have {L} entries")
        if self.native.is_floating_point() or not bool(
            ((self.native >= 0) & (self.native < len(ALPHABET))).all()
        ):
            raise ValueError(f"Backbone.native must hold residue indices in [0, {len(ALPHABET)})")

    def __len__(self) -> int:
        return self.X.shape[0]

    @property
    def sequence(self) -> str:
        """The native sequence as one-letter codes."""
        return decode(self.native)

    def index(self, res_id: int) -> int:
        """0-based position of the structure's residue number ``res_id`` (the first residue with
        that number: insertion codes are not told apart)."""
        try:
            return self.res_ids.index(int(res_id))
        except ValueError:
            raise ValueError(
                f"residue {res_id} is not in {self.name} (residues {self.res_ids[0]}.."
                f"{self.res_ids[-1]})"
            ) from None

    def fingerprint(self) -> str:
        """A short hash of coordinates and sequence (names a cached encoding)."""
        h = hashlib.sha1(self.X.numpy().tobytes())
        h.update(self.native.numpy().tobytes())
        return h.hexdigest()[:12]


def encode(sequence: str) -> torch.Tensor:
    """One-letter sequence -> (L,) int64 indices in :data:`ALPHABET` (ValueError on bad letters)."""
    bad = sorted(set(sequence) - set(ALPHABET))
    if bad:
        raise ValueError(f"sequence has letters outside {ALPHABET}: {bad}")
    return torch.tensor([ALPHABET.index(c) for c in sequence], dtype=torch.long)


def decode(indices: torch.Tensor) -> str:
    """(L,) indices -> one-letter sequence."""
    idx = [int(i) for i in torch.as_tensor(indices).flatten()]
    bad = [i for i in idx if not 0 <= i < len(ALPHABET)]
    if bad:
        raise ValueError(f"indices must lie in [0, {len(ALPHABET)}) (the alphabet {ALPHABET}), "
                         f"got {bad[:5]}")  # fmt: skip
    return "".join(ALPHABET[i] for i in idx)


def _read(path: Path):
    import biotite.structure.io.pdb as pdb
    import biotite.structure.io.pdbx as pdbx

    name = path.name.lower()
    raw = path.read_bytes()
    if name.endswith(".gz"):
        raw, name = gzip.decompress(raw), name[:-3]
    elif name.endswith(".bz2"):
        raw, name = bz2.decompress(raw), name[:-4]
    if name.endswith(".pdb") or name.endswith(".ent"):
        return pdb.PDBFile.read(io.StringIO(raw.decode())).get_structure(model=1)
    if name.endswith(".cif") or name.endswith(".mmcif"):
        return pdbx.get_structure(pdbx.CIFFile.read(io.StringIO(raw.decode())), model=1)
    if name.endswith(".bcif"):
        return pdbx.get_structure(pdbx.BinaryCIFFile.read(io.BytesIO(raw)), model=1)
    raise ValueError(f"{path}: unknown structure format (expected .pdb, .cif or .bcif, maybe .gz)")


def _read_named(path: Path):
    """The structure's atoms, or a ValueError that names the file (whatever the parser raised)."""
    import warnings

    if not path.is_file():
        raise ValueError(f"no structure file at {path}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # biotite guesses elements of old PDB files
        try:
            return _read(path)
        except ValueError as e:
            if str(path) in str(e):  # already names the file
                raise
            raise ValueError(f"{path}: cannot read the structure ({e})") from e
        except Exception as e:  # biotite's own parse errors, bad gzip, ...
            raise ValueError(f"{path}: cannot read the structure ({type(e).__name__}: {e})") from e


def load_backbone(path: str | Path, chains: str | list[str] | None = None) -> Backbone:
    """Read the amino-acid chains of a structure file (PDB / mmCIF / BinaryCIF, plain, .gz or .bz2).

    Residues missing any of N, CA, C, O are dropped (ProteinMPNN cannot featurise them); the
    first altloc is kept. ``chains`` picks chains by ID (default: every chain with amino acids).
    """
    import biotite.structure as struc

    path = Path(path)
    atoms = _read_named(path)
    atoms = atoms[struc.filter_amino_acids(atoms) & ~atoms.hetero]
    wanted = [chains] if isinstance(chains, str) else chains
    if wanted is not None:
        missing = sorted(set(wanted) - set(atoms.chain_id.tolist()))
        if missing:
            raise ValueError(f"{path.name}: no amino-acid chain {missing}")
        atoms = atoms[np.isin(atoms.chain_id, wanted)]
    if atoms.array_length() == 0:
        raise ValueError(f"{path.name}: no amino-acid residues")
    xyz, seq, ridx, chain_enc, res_ids, sg = [], [], [], [], [], {}
    chain_ids = list(dict.fromkeys(atoms.chain_id.tolist()))
    next_pos = 0  # ProteinMPNN's numbering: positions run on across chains, +100 per chain
    for c, chain in enumerate(chain_ids, start=1):
        part = atoms[atoms.chain_id == chain]
        prev = None  # (index, residue number) of the chain's previous kept residue
        for residue in struc.residue_iter(part):
            coords = []
            for atom in BACKBONE_ATOMS:
                hit = residue.coord[residue.atom_name == atom]
                if len(hit) == 0:
                    break
                coords.append(hit[0])
            if len(coords) < 4:
                continue
            number = int(residue.res_id[0])
            # a gap in the numbering (unresolved or dropped residues) stays a jump in the index,
            # as ProteinMPNN's own parser keeps it; insertion codes advance by one
            idx = (100 * (c - 1) + next_pos if prev is None else
                   prev[0] + max(1, number - prev[1]))  # fmt: skip
            prev = (idx, number)
            if residue.res_name[0] in ("CYS", "CYX") and (residue.atom_name == "SG").any():
                sg[len(xyz)] = residue.coord[residue.atom_name == "SG"][0]
            xyz.append(np.stack(coords))
            seq.append(ALPHABET.index(THREE_TO_ONE.get(residue.res_name[0], "X")))
            ridx.append(idx)
            chain_enc.append(c)
            res_ids.append(number)
        if prev is not None:
            next_pos = prev[0] - 100 * (c - 1) + 1
    if not xyz:
        raise ValueError(f"{path.name}: no residue has all of N, CA, C, O")
    cys = sorted(sg)
    bonds = tuple(
        (i, j)
        for k, i in enumerate(cys)
        for j in cys[k + 1 :]
        if np.linalg.norm(sg[i] - sg[j]) < 2.5
    )
    label = path.name.split(".")[0] + (f"_{''.join(wanted)}" if wanted else "")
    return Backbone(
        name=label,
        X=torch.tensor(np.stack(xyz), dtype=torch.float32),
        native=torch.tensor(seq, dtype=torch.long),
        residue_idx=torch.tensor(ridx, dtype=torch.long),
        chain_encoding=torch.tensor(chain_enc, dtype=torch.long),
        res_ids=tuple(res_ids),
        disulfides=bonds,
    )


def examples_dir() -> Path | None:
    """mdanalysistests' data folder, or None when it is not installed."""
    try:
        import MDAnalysisTests
    except ImportError:
        return None
    return Path(MDAnalysisTests.__file__).parent / "data"


def example_backbone(name: str) -> Backbone:
    """One of the demo's backbones (``5pti``, ``cobrotoxin``) from mdanalysistests."""
    if name not in EXAMPLES:
        raise ValueError(f"unknown example {name!r}; choose from {sorted(EXAMPLES)}")
    root = examples_dir()
    if root is None:
        raise ValueError(
            "the example backbones come from mdanalysistests: pip install 'icml26-fidia[examples]'"
        )
    rel, chain = EXAMPLES[name]
    bb = load_backbone(root / rel, chain)
    return dataclasses.replace(bb, name=name)


def ideal_helix(length: int):
    """An alpha-helix backbone (N, CA, C, O) from ideal helical parameters: a stand-in structure
    for timings and tests when no example file is installed."""
    if length < 4:
        raise ValueError(f"length must be >= 4, got {length}")
    # rise 1.5 A and 100 degrees per residue; atom radii and phase offsets of an ideal helix
    atoms = {"N": (1.55, -28.0, -0.95), "CA": (2.3, 0.0, 0.0), "C": (1.65, 28.0, 0.95),
             "O": (1.9, 48.0, 2.1)}  # fmt: skip
    X = np.zeros((length, 4, 3))
    for i in range(length):
        for k, (r, phase, dz) in enumerate(atoms.values()):
            a = math.radians(100.0 * i + phase)
            X[i, k] = (r * math.cos(a), r * math.sin(a), 1.5 * i + dz)
    return Backbone(
        name=f"helix{length}",
        X=torch.tensor(X, dtype=torch.float32),
        native=torch.zeros(length, dtype=torch.long),
        residue_idx=torch.arange(length),
        chain_encoding=torch.ones(length, dtype=torch.long),
        res_ids=tuple(range(1, length + 1)),
    )
