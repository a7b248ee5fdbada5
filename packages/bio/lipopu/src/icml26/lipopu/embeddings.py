"""Per-residue protein-language-model features for residue bags (the ``[esm]`` extra).

``esm_residue_features`` runs an ESM-2 model (``fair-esm``'s pure-PyTorch ``esm`` module) over
each chain's sequence, read from the structure, and returns the representation of every residue
of each bag, ready for ``PocketAttentionMIL(PocketModelConfig(residue_features=D))`` through
``StructureBags(..., features=...)`` in training and ``score_pockets(..., residue_features=...)``
in prediction. No ESM weights ship with this package: load yours with
``esm.pretrained.load_model_and_alphabet_local(path)``.
"""

from __future__ import annotations

import biotite.structure as struc
import numpy as np
import torch
from biotite.sequence import ProteinSequence

from icml26.lipopu.structure import ResidueBag


def _one_letter(name: str) -> str:
    try:
        return ProteinSequence.convert_letter_3to1(name)
    except KeyError:
        return "X"


def esm_residue_features(
    atoms: struc.AtomArray,
    bags: list[ResidueBag],
    model: torch.nn.Module,
    alphabet,
    layer: int | None = None,
) -> list[np.ndarray]:
    """(L_i, D) float32 features of each bag's residues from ESM-2 layer ``layer`` (default:
    the last). ``atoms``: the structure (``read_structure``); ``model`` / ``alphabet``: an ESM-2
    model and its alphabet (``fair-esm``). Chains are embedded one by one, residues in file
    order (a chain break is not marked) and matched by (chain, number): insertion codes are not
    told apart."""
    layer = model.num_layers if layer is None else layer
    if not 0 <= layer <= model.num_layers:
        raise ValueError(f"layer must be in [0, {model.num_layers}], got {layer}")
    device = next(model.parameters()).device
    convert = alphabet.get_batch_converter()
    table: dict[tuple[str, int], np.ndarray] = {}
    model.eval()
    for chain in np.unique(atoms.chain_id):
        res_ids, names = struc.get_residues(atoms[atoms.chain_id == chain])
        sequence = "".join(_one_letter(str(n)) for n in names)
        _, _, tokens = convert([(str(chain), sequence)])
        with torch.no_grad():
            out = model(tokens.to(device), repr_layers=[layer])
        # (1, L + 2, D): drop the begin / end tokens
        rep = out["representations"][layer][0, 1 : len(sequence) + 1].float().cpu().numpy()
        for i, res_id in enumerate(res_ids):
            table[(str(chain), int(res_id))] = rep[i]
    dim = next(iter(table.values())).shape[-1] if table else 0
    features = []
    for bag in bags:
        keys = [(str(c), int(r)) for c, r in zip(bag.chain, bag.res_id, strict=True)]
        rows = [table.get(k) for k in keys]
        missing = [f"{c}{r}" for (c, r), v in zip(keys, rows, strict=True) if v is None]
        if missing:
            raise ValueError(f"residues {missing[:5]} of a bag are not in the structure's chains")
        features.append(
            np.stack(rows).astype(np.float32) if rows else np.zeros((0, dim), np.float32)
        )
    return features
