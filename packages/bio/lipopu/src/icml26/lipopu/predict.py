"""Rank a structure's pockets with a trained model and read its residue attention."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from icml26.lipopu.data import Standardiser
from icml26.lipopu.model import PAD, PocketAttentionMIL
from icml26.lipopu.structure import (
    DescriptorMap,
    Pocket,
    descriptor_rows,
    pockets,
    read_structure,
    residue_bag,
)

MEASURED_SASA_SCALE = {"surf_pol_vdw14": 0.453, "surf_apol_vdw14": 0.463, "surf_vdw14": 0.470}
"""Median SLiPP / fpocket-rs 0.1 ratio of the three SASA terms over the 126 pockets of six example
structures of ``mdanalysistests`` (``icml26-lipopu demo`` measures it again and records it under
``case_study.descriptor_map``); used when a checkpoint carries no map of its own."""


@dataclass
class PocketPrediction:
    """One pocket of a structure: ``score`` (logit, per category), its fpocket ``pocket``, the
    lining ``residues`` (labels like ``LEU715:A``) and their ``attention`` weights (sum 1)."""

    score: np.ndarray
    pocket: Pocket
    residues: list[str]
    attention: np.ndarray

    def top_residues(self, k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` most attended residues. A model on residue types alone (no per-residue
        features) weighs every residue of one type the same: see ``attention_by_type``."""
        order = np.argsort(-self.attention, kind="stable")[:k]
        return [(self.residues[i], float(self.attention[i])) for i in order]

    def attention_by_type(self) -> dict[str, float]:
        """Total attention per residue type (LEU, PHE, ...), largest first."""
        total: dict[str, float] = {}
        for label, a in zip(self.residues, self.attention, strict=True):
            total[label[:3]] = total.get(label[:3], 0.0) + float(a)
        return dict(sorted(total.items(), key=lambda kv: -kv[1]))


def save_predictor(
    directory: str | os.PathLike,
    model: PocketAttentionMIL,
    standardiser: Standardiser,
    descriptor_map: DescriptorMap | None = None,
    **extra,
) -> Path:
    """Save a model with what prediction needs: the descriptor standardisation and the fpocket-rs
    descriptor map (safetensors + JSON)."""
    if not isinstance(model, PocketAttentionMIL):
        raise TypeError(f"model must be a PocketAttentionMIL, got {type(model).__name__}")
    if not isinstance(standardiser, Standardiser):
        raise TypeError(f"standardiser must be a Standardiser, got {type(standardiser).__name__}")
    if descriptor_map is not None and not isinstance(descriptor_map, DescriptorMap):
        raise TypeError(f"descriptor_map must be a DescriptorMap, got {type(descriptor_map)}")
    state = {"standardiser": standardiser.state(), **extra}
    if descriptor_map is not None:
        state["descriptor_map"] = descriptor_map.state()
    return model.save_pretrained(directory, extra=state)


def load_predictor(directory: str | os.PathLike):
    """(model, standardiser, descriptor map, config extras) of a ``save_predictor`` folder."""
    model = PocketAttentionMIL.from_pretrained(directory)
    meta = json.loads((Path(directory) / "config.json").read_text())
    if "standardiser" not in meta:
        raise ValueError(f"{directory}: config.json has no standardiser (save with save_predictor)")
    dmap = DescriptorMap(meta.get("descriptor_map", {}).get("scale", MEASURED_SASA_SCALE))
    return model, Standardiser.from_state(meta["standardiser"]), dmap, meta


def score_pockets(
    model: PocketAttentionMIL,
    standardiser: Standardiser,
    descriptor_map: DescriptorMap,
    structure,
    found: list[Pocket],
    residue_features: list[np.ndarray] | None = None,
    radius: float | None = None,
) -> list[PocketPrediction]:
    """Score ``found`` pockets of ``structure`` (file or AtomArray); one prediction each, in the
    order given. Residue bags are the residues fpocket-rs lists for each pocket (or, with
    ``radius``, those within that many angstrom of its alpha spheres, as ``residue_bag``);
    ``residue_features`` (one (L_i, D) array per pocket, e.g. ``esm_residue_features``) is
    required by a model built with ``residue_features=D``."""
    if not found:
        return []
    atoms = structure if not isinstance(structure, str | os.PathLike) else read_structure(structure)
    bags = [residue_bag(atoms, p, radius) for p in found]
    length = max(1, *(len(b) for b in bags))
    residues = np.full((len(found), length), PAD, dtype=np.int64)
    for i, b in enumerate(bags):
        residues[i, : len(b)] = b.types
    feats = None
    if residue_features is not None:
        if len(residue_features) != len(found):
            raise ValueError("residue_features needs one (L_i, D) array per pocket")
        dim = residue_features[0].shape[-1]
        feats = np.zeros((len(found), length, dim), dtype=np.float32)
        for i, (b, f) in enumerate(zip(bags, residue_features, strict=True)):
            if len(f) != len(b):
                raise ValueError(f"residue_features[{i}] has {len(f)} rows, its bag {len(b)}")
            feats[i, : len(f)] = f
    X = standardiser(descriptor_map(descriptor_rows(found)))
    device = next(model.parameters()).device
    model.eval()
    with torch.no_grad():
        out = model(
            torch.as_tensor(residues, device=device),
            torch.as_tensor(X, device=device),
            None if feats is None else torch.as_tensor(feats, device=device),
        )
    logits = out.logits.float().cpu().numpy()
    attention = (
        out.attention.float().cpu().numpy()
        if out.attention is not None
        else np.zeros((len(found), length))
    )
    return [
        PocketPrediction(logits[i], p, bags[i].labels(), attention[i, : len(bags[i])])
        for i, p in enumerate(found)
    ]


def predict(
    structure_file: str | os.PathLike,
    checkpoint: str | os.PathLike,
    category: int = 0,
    residue_features=None,
):
    """Rank the pockets of a structure file with a saved model, best first.

    Returns a list of ``PocketPrediction`` sorted by the score of output ``category`` (0 for a
    lipid / not model). Each carries its fpocket-rs pocket, lining residues and their attention.
    ``residue_features(atoms, bags) -> list of (L_i, D)`` feeds a model built with per-residue
    features (e.g. ``functools.partial(esm_residue_features, model=esm2, alphabet=alphabet)``).
    """
    model, standardiser, dmap, _ = load_predictor(checkpoint)
    if not 0 <= category < model.config.n_outputs:
        raise ValueError(f"category must be in [0, {model.config.n_outputs}), got {category}")
    atoms = read_structure(structure_file)
    found = pockets(atoms)
    feats = None
    if model.config.residue_features:
        if residue_features is None:
            raise ValueError(
                "this model reads per-residue features: pass residue_features=(atoms, bags) -> "
                "features, e.g. a partial of esm_residue_features"
            )
        feats = residue_features(atoms, [residue_bag(atoms, p) for p in found])
    preds = score_pockets(model, standardiser, dmap, atoms, found, feats)
    return sorted(preds, key=lambda p: -float(p.score[category]))
