"""Pocket tables: the SLiPP loader, a synthetic PU cohort, grouped splits, SCAR labels, bags.

The SLiPP table (Chou et al., J. Chem. Inf. Model. 2025; github dassamalab/SLiPP_2024) holds
fpocket pockets of PDB entries with their descriptors, amino-acid counts and the ligand found in
them: lipids (CLR, MYR, OLA, PLM, STE), other ligands (ADN, B12, BGC, COA) and ``none`` (pockets
of the same proteins without a ligand). Its licence is not stated, so it is never shipped here:
``load_slipp(path)`` reads a copy the user downloaded. Without it, ``synthetic_cohort`` generates
a documented stand-in with the same columns.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from icml26.lipopu.model import AMINO_ACIDS, PAD

DESCRIPTORS = (
    "pock_vol", "nb_AS", "mean_as_ray", "mean_as_solv_acc", "apol_as_prop", "mean_loc_hyd_dens",
    "hydrophobicity_score", "volume_score", "polarity_score", "charge_score", "flex",
    "prop_polar_atm", "as_density", "as_max_dst", "surf_pol_vdw14", "surf_apol_vdw14", "surf_vdw14",
)  # fmt: skip
"""SLiPP's 17 fpocket descriptors (its random forest's inputs), in its order."""
LIPIDS = {"CLR": "sterol", "MYR": "fatty_acyl", "OLA": "fatty_acyl", "PLM": "fatty_acyl",
          "STE": "fatty_acyl"}  # fmt: skip
"""Lipid ligand codes and their category: cholesterol is a sterol; myristate, oleate,
palmitate and stearate are fatty acyls."""
CATEGORIES = ("sterol", "fatty_acyl")
REQUIRED = ("pdb", "lig", *DESCRIPTORS, *AMINO_ACIDS)


@dataclass
class PocketTable:
    """Pockets with descriptors, residue composition, protein and true labels.

    ``descriptors``: (N, 17) float; ``composition``: (N, 20) int residue counts;
    ``protein``: (N,) protein id (the PDB code: the unit of every split); ``ligand``: (N,) ligand
    code or ``none``; ``lipid``: (N,) 0/1; ``category``: (N, 2) 0/1 for ``CATEGORIES``.
    """

    descriptors: np.ndarray
    composition: np.ndarray
    protein: np.ndarray
    ligand: np.ndarray
    source: str = "SLiPP"
    lipid: np.ndarray = field(init=False)
    category: np.ndarray = field(init=False)

    def __post_init__(self):
        d, c = np.asarray(self.descriptors), np.asarray(self.composition)
        n = len(d)
        if d.shape != (n, len(DESCRIPTORS)) or not np.issubdtype(d.dtype, np.number):
            raise ValueError(f"descriptors must be numbers of shape (N, {len(DESCRIPTORS)}), got "
                             f"{d.dtype} {d.shape}")  # fmt: skip
        if not np.isfinite(d).all():
            raise ValueError("descriptors contain NaN or inf: impute or drop those pockets")
        if (
            c.shape != (n, len(AMINO_ACIDS))
            or not np.issubdtype(c.dtype, np.number)
            or (c < 0).any()
        ):
            raise ValueError(f"composition must be non-negative residue counts of shape (N, "
                             f"{len(AMINO_ACIDS)}), got {c.dtype} {c.shape}")  # fmt: skip
        for name in ("composition", "protein", "ligand"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} has {len(getattr(self, name))} rows, descriptors {n}")
        kinds = np.array([LIPIDS.get(str(code).upper(), "") for code in self.ligand], dtype=object)
        self.lipid = (kinds != "").astype(np.int64)
        self.category = np.stack([(kinds == c).astype(np.int64) for c in CATEGORIES], axis=1)

    def __len__(self) -> int:
        return len(self.descriptors)

    def fingerprint(self) -> str:
        """A hash of the proteins, ligands and residue counts, row by row: a saved model's split
        is only rebuilt on the table it was trained on."""
        import hashlib

        h = hashlib.sha256()
        for part in (self.protein, self.ligand):
            h.update("\n".join(map(str, part)).encode())
        h.update(np.ascontiguousarray(self.composition, dtype=np.int64).tobytes())
        return h.hexdigest()[:16]

    def subset(self, index: np.ndarray) -> PocketTable:
        return PocketTable(
            self.descriptors[index], self.composition[index], self.protein[index],
            self.ligand[index], self.source,
        )  # fmt: skip


def _protein_code(path: str) -> str:
    """'ADN/pdb1BX4.pdb' -> '1BX4': the same PDB entry appears under several ligand folders."""
    stem = Path(str(path)).name.split(".")[0]
    return (stem[3:] if stem.lower().startswith("pdb") else stem).upper()


def load_slipp(path: str | os.PathLike) -> PocketTable:
    """Read the SLiPP pocket table (or any CSV with its columns), validating it.

    Needs the columns ``pdb``, ``lig``, the 17 ``DESCRIPTORS`` and the 20 amino-acid counts.
    A missing column, a non-numeric or non-finite descriptor, or a negative / fractional residue
    count raises ValueError naming the column and the file's line.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(
            f"{path}: no such file. Download training_pockets.csv from the SLiPP repository "
            "(github.com/dassamalab/SLiPP_2024) and pass its path"
        )
    try:
        frame = pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not a readable CSV ({e})") from None
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}")
    if len(frame) == 0:
        raise ValueError(f"{path}: the table has no rows")
    numeric = {}
    for col in (*DESCRIPTORS, *AMINO_ACIDS):
        values = pd.to_numeric(frame[col], errors="coerce")
        bad = np.flatnonzero(~np.isfinite(values.to_numpy(dtype=float)))
        if len(bad):
            row = int(bad[0])
            raise ValueError(
                f"{path}, line {row + 2}: column {col!r} must be a finite number, got "
                f"{frame[col].iloc[row]!r} ({len(bad)} such row(s))"
            )
        numeric[col] = values.to_numpy(dtype=float)
    counts = np.stack([numeric[a] for a in AMINO_ACIDS], axis=1)
    bad = np.argwhere((counts < 0) | (counts != np.round(counts)))
    if len(bad):
        row, col = bad[0]
        raise ValueError(
            f"{path}, line {row + 2}: residue count {AMINO_ACIDS[col]!r} must be a non-negative "
            f"integer, got {counts[row, col]!r}"
        )
    protein = np.array([_protein_code(p) for p in frame["pdb"]], dtype=object)
    ligand = frame["lig"].astype(str).str.upper().to_numpy(dtype=object)
    if not any(code in LIPIDS for code in ligand):
        raise ValueError(
            f"{path}: no pocket binds a lipid (column 'lig' holds none of {sorted(LIPIDS)}): "
            "nothing to learn or evaluate against. Is this the SLiPP pocket table?"
        )
    keep, merged = _merge_cross_folder_copies(frame, protein, counts, ligand)
    return PocketTable(
        descriptors=np.stack([numeric[d] for d in DESCRIPTORS], axis=1)[keep],
        composition=counts.astype(np.int64)[keep],
        protein=protein[keep],
        ligand=ligand[keep],
        source=f"SLiPP ({path.name}; {merged} cross-folder copies merged)",
    )


def _merge_cross_folder_copies(frame, protein, counts, ligand) -> tuple[np.ndarray, int]:
    """SLiPP files a PDB entry once per ligand folder and runs fpocket on each copy, so one
    pocket can appear in several folders (its Monte-Carlo volume differing slightly), labeled
    with each folder's ligand. Rows of one entry from different folders with the same residue
    composition and the same deterministic descriptors are one pocket: keep the first, a lipid
    site when any copy is (``ligand`` is edited in place). Returns (rows to keep, merged)."""
    folder = frame["pdb"].astype(str).map(lambda p: str(Path(p).parent)).to_numpy()
    exact = frame[["nb_AS", "hydrophobicity_score", "polarity_score", "charge_score"]].to_numpy()
    first: dict = {}
    drop = np.zeros(len(frame), dtype=bool)
    for i in range(len(frame)):
        key = (protein[i], counts[i].tobytes(), exact[i].tobytes())
        j = first.setdefault(key, i)
        if j == i or folder[j] == folder[i]:
            continue  # twin pockets of one structure (chains of a homodimer) stay apart
        drop[i] = True
        if ligand[i] in LIPIDS and ligand[j] not in LIPIDS:
            ligand[j] = ligand[i]
    return np.flatnonzero(~drop), int(drop.sum())


def find_slipp() -> Path | None:
    """The SLiPP table named by ``$LIPOPU_SLIPP``, or None. Never searched for: a run records
    the path it read (the demo writes it into its command), so a rerun anywhere reads the same
    file or says it has none."""
    env = os.environ.get("LIPOPU_SLIPP")
    return Path(env) if env else None


# --- a synthetic stand-in ----------------------------------------------------------------------

# Residue propensities (relative weights) of pocket linings; lipid pockets are apolar and
# aliphatic, sterol pockets richer in aromatics, fatty-acyl pockets carry a basic residue for
# the carboxylate head group. Chosen by hand to look like the published trends, not fitted.
_BASE = np.array([8, 5, 4, 5, 2, 4, 5, 7, 3, 6, 9, 5, 2, 4, 4, 6, 5, 1, 4, 7], dtype=float)
_LIPID = _BASE * np.where(
    np.isin(AMINO_ACIDS, ["LEU", "ILE", "VAL", "PHE", "MET", "ALA"]), 2.0, 0.7
)
_STEROL = _LIPID * np.where(np.isin(AMINO_ACIDS, ["TRP", "PHE", "TYR"]), 2.0, 1.0)
_FATTY = _LIPID * np.where(np.isin(AMINO_ACIDS, ["ARG", "LYS", "TYR"]), 2.0, 1.0)


def synthetic_cohort(
    n_proteins: int = 600, pockets_per_protein: int = 8, seed: int = 0
) -> PocketTable:
    """A PU pocket cohort with SLiPP's columns, for runs without the SLiPP table.

    Each protein has ``pockets_per_protein`` pockets; a pocket is a lipid site with probability
    0.13 (SLiPP's share), split 1:4 between sterol and fatty-acyl. Descriptors are correlated
    Gaussians whose mean moves with the class along the hydrophobic / size directions (so a
    descriptor model gets part of the signal), and residue counts are multinomial with the class's
    propensities (so the composition carries the rest). Nothing here is measured data.
    """
    sizes = (n_proteins, pockets_per_protein)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in sizes):
        raise TypeError(f"n_proteins and pockets_per_protein must be ints, got {sizes}")
    if n_proteins < 4 or pockets_per_protein < 1:
        raise ValueError("synthetic_cohort needs n_proteins >= 4 and pockets_per_protein >= 1")
    g = np.random.default_rng([0x5E7, seed])
    n = n_proteins * pockets_per_protein
    kind = g.choice(3, size=n, p=[0.87, 0.026, 0.104])  # none-lipid, sterol, fatty acyl
    mix = g.normal(size=(len(DESCRIPTORS), len(DESCRIPTORS))) / np.sqrt(len(DESCRIPTORS))
    descriptors = g.normal(size=(n, len(DESCRIPTORS))) @ (np.eye(len(DESCRIPTORS)) + 0.5 * mix)
    shift = np.zeros(len(DESCRIPTORS))
    for name, s in (("apol_as_prop", 0.6), ("hydrophobicity_score", 0.7), ("pock_vol", 0.4),
                    ("polarity_score", -0.5), ("charge_score", -0.3)):  # fmt: skip
        shift[DESCRIPTORS.index(name)] = s
    descriptors += (kind > 0)[:, None] * shift
    size = g.poisson(18, size=n) + 4
    comp = np.empty((n, len(AMINO_ACIDS)), dtype=np.int64)
    for k, weights in enumerate((_BASE, _STEROL, _FATTY)):
        rows = np.flatnonzero(kind == k)
        p = weights / weights.sum()
        comp[rows] = (
            np.stack([g.multinomial(size[r], p) for r in rows]) if len(rows) else comp[rows]
        )
    ligand = np.array(["none", "CLR", "PLM"], dtype=object)[kind]
    protein = np.array([f"P{i:04d}" for i in np.repeat(np.arange(n_proteins), pockets_per_protein)],
                       dtype=object)  # fmt: skip
    return PocketTable(descriptors, comp, protein, ligand, source="synthetic cohort")


# --- splits, labels, bags ------------------------------------------------------------------------


@dataclass(frozen=True)
class Split:
    """Row indices of the train / validation / test pockets; no protein is in two of them."""

    train: np.ndarray
    val: np.ndarray
    test: np.ndarray


SPLIT_FRACTIONS = (0.8, 0.1, 0.1)
"""Train / validation / test shares of the proteins (the usual 80 / 10 / 10)."""
LEGACY_SPLIT_FRACTIONS = (0.7, 0.1, 0.2)
"""The split of checkpoints saved before ``train`` recorded its fractions."""


def grouped_split(
    protein: np.ndarray, seed: int, fractions: tuple[float, float, float] = SPLIT_FRACTIONS
) -> Split:
    """Split pockets by protein (never by pocket): shuffled proteins fill train, val, test
    (80 / 10 / 10 by default, the usual proportions)."""
    if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-9 or min(fractions) <= 0:
        raise ValueError(f"fractions must be three positive numbers summing to 1, got {fractions}")
    groups = np.unique(protein)
    if len(groups) < 3:
        raise ValueError(f"a grouped split needs >= 3 proteins, got {len(groups)}")
    order = np.random.default_rng(seed).permutation(groups)
    cut1 = max(1, round(fractions[0] * len(order)))
    cut2 = min(len(order) - 1, max(cut1 + 1, round((fractions[0] + fractions[1]) * len(order))))
    where = {g: 0 for g in order[:cut1]} | {g: 1 for g in order[cut1:cut2]}
    part = np.array([where.get(p, 2) for p in protein])
    return Split(*(np.flatnonzero(part == k) for k in range(3)))


def composition_twins(
    composition: np.ndarray, train: np.ndarray, test: np.ndarray, min_residues: int = 8
) -> np.ndarray:
    """(len(test),) True where a test pocket of >= ``min_residues`` residues has exactly the
    residue composition of some training pocket: a homologous site filed under another PDB
    entry, which a split by entry does not keep apart."""
    seen = {composition[i].tobytes() for i in train}
    return np.array(
        [composition[i].sum() >= min_residues and composition[i].tobytes() in seen for i in test],
        dtype=bool,
    )


def scar_labels(y: np.ndarray, c: float, seed: int) -> np.ndarray:
    """Selected completely at random: each true positive keeps its label with probability ``c``;
    everything else is unlabeled (0). ``y``: (N,) or (N, K) 0/1."""
    if not 0.0 < c <= 1.0:
        raise ValueError(f"c (the labeled fraction of positives) must be in (0, 1], got {c}")
    values = np.unique(np.asarray(y))
    if not set(values.tolist()) <= {0, 1}:
        raise ValueError(f"y must hold 0/1 labels, got values {values[:5].tolist()}")
    # a stream of its own: the same integer seed elsewhere (a generator) must not correlate
    keep = np.random.default_rng([0x5CA2, seed]).random(np.shape(y)) < c
    return (np.asarray(y) * keep).astype(np.int64)


def check_composition(composition, name: str = "composition") -> np.ndarray:
    """(N, 20) non-negative integer residue counts as int64, or a ValueError naming ``name``."""
    raw = np.asarray(composition)
    if raw.ndim != 2 or raw.shape[1] != len(AMINO_ACIDS):
        raise ValueError(f"{name} must be (N, {len(AMINO_ACIDS)}) residue counts, got {raw.shape}")
    whole = raw.dtype.kind in "iub" or (np.isfinite(raw).all() and (raw == np.round(raw)).all())
    if not whole:
        raise ValueError(f"{name} must hold whole residue counts")
    if (raw < 0).any():
        raise ValueError(f"{name} holds negative counts")
    return raw.astype(np.int64)


def composition_bags(
    composition: np.ndarray, keep: np.ndarray | None = None, rng: np.random.Generator | None = None
) -> np.ndarray:
    """Residue-type bags from amino-acid counts: (N, 20) counts -> (N, L) types, ``PAD`` after.

    With ``keep`` (N,) in (0, 1], each residue stays with that probability (drawn from ``rng``):
    the training-time perturbation of an ambiguous pocket definition. A bag never ends up empty
    when its pocket had residues (one residue is kept at random).
    """
    counts = check_composition(composition)
    if keep is not None:
        keep = np.asarray(keep, dtype=float)
        if keep.shape != (len(counts),) or not ((keep > 0) & (keep <= 1)).all():
            raise ValueError(f"keep must be ({len(counts)},) probabilities in (0, 1]")
        rng = rng or np.random.default_rng()
        counts = rng.binomial(counts, np.asarray(keep, dtype=float)[:, None])
        empty = (counts.sum(1) == 0) & (np.asarray(composition).sum(1) > 0)
        for i in np.flatnonzero(empty):
            p = composition[i] / composition[i].sum()
            counts[i, rng.choice(len(AMINO_ACIDS), p=p)] = 1
    length = max(int(counts.sum(1).max(initial=0)), 1)
    bags = np.full((len(counts), length), PAD, dtype=np.int64)
    rows = np.repeat(np.arange(len(counts)), counts.sum(1))
    types = np.concatenate([np.repeat(np.arange(len(AMINO_ACIDS)), c) for c in counts] or [[]])
    starts = np.concatenate([[0], np.cumsum(counts.sum(1))[:-1]])
    cols = np.arange(len(rows)) - np.repeat(starts, counts.sum(1))
    bags[rows, cols] = types
    return bags


@dataclass(frozen=True)
class Standardiser:
    """Per-descriptor centring and scaling fitted on training pockets (median / IQR-based, so a
    few huge pockets do not set the scale); heavy-tailed sizes are log-transformed first."""

    center: tuple[float, ...]
    scale: tuple[float, ...]
    log: tuple[bool, ...]

    @classmethod
    def fit(cls, X: np.ndarray) -> Standardiser:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or len(X) == 0:
            raise ValueError(f"descriptors must be (N >= 1, D) training rows, got {X.shape}")
        log = tuple(bool(v) for v in (X.min(0) >= 0) & (np.percentile(X, 99, axis=0) > 50))
        Z = np.where(log, np.log1p(np.clip(X, 0, None)), X)
        q25, q50, q75 = np.percentile(Z, [25, 50, 75], axis=0)
        scale = np.where(q75 - q25 > 1e-8, (q75 - q25) / 1.349, np.maximum(Z.std(0), 1.0))
        return cls(tuple(map(float, q50)), tuple(map(float, scale)), log)

    def __call__(self, X: np.ndarray) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != len(self.center):
            raise ValueError(f"descriptors must be (N, {len(self.center)}), got {X.shape}")
        Z = np.where(self.log, np.log1p(np.clip(X, 0, None)), X)
        Z = np.clip((Z - np.array(self.center)) / np.array(self.scale), -8, 8)
        # a descriptor a structure cannot give (NaN: flexibility without B-factors) is imputed
        # with the training median, 0 after centring
        return np.nan_to_num(Z, nan=0.0).astype(np.float32)

    def state(self) -> dict:
        return {"center": list(self.center), "scale": list(self.scale), "log": list(self.log)}

    @classmethod
    def from_state(cls, state: dict) -> Standardiser:
        return cls(tuple(state["center"]), tuple(state["scale"]), tuple(state["log"]))
