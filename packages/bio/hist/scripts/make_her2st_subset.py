"""Rebuild the bundled HER2ST subset (``src/icml26/hist/data/her2st_subset.npz``).

    uv run --package icml26-hist python packages/bio/hist/scripts/make_her2st_subset.py \
        /path/to/her2st  [--genes 50] [--patch 32]

Reads sections C2-C6 with :func:`icml26.hist.data.load_her2st` (the original count, spot and
image files of Andersson et al., Nat. Commun. 2021), keeps the ``--genes`` most variable genes
shared by every section (library-size normalised log1p variance; genes seen in >= 10% of the spots;
mitochondrial and ribosomal genes left out), and stores per spot its raw counts for those genes,
its pixel coordinates and an RGB patch of the spot (one spot diameter, 100 um ~ 145 px at this
scan's resolution, box-resampled to ``--patch`` px). The patches of a section are stored as one
vertical strip, JPEG quality 92 without chroma subsampling (patch edges on the 8 px block grid,
so no block straddles two spots): about a megabyte for the whole subset.
"""

import argparse
import re
from pathlib import Path

import numpy as np

from icml26.hist.data import SPOT_DIAMETER_PX, encode_patch_strip, load_her2st
from icml26.hist.io import atomic_save_npz

SECTIONS = ("C2", "C3", "C4", "C5", "C6")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("root", type=Path)
    p.add_argument("--genes", type=int, default=50)
    p.add_argument("--patch", type=int, default=32)
    p.add_argument(
        "--out",
        type=Path,
        default=Path(__file__).resolve().parent.parent / "src/icml26/hist/data/her2st_subset.npz",
    )
    args = p.parse_args()
    sections = [load_her2st(args.root, s, patch_px=args.patch, genes=None) for s in SECTIONS]
    shared = sorted(set.intersection(*(set(s.genes) for s in sections)))
    skip = re.compile(r"^(MT-|RP[SL]\d|MRP[SL])")
    shared = [g for g in shared if not skip.match(g)]
    stacked = np.concatenate([s.counts[:, [s.genes.index(g) for g in shared]] for s in sections])
    detected = (stacked > 0).mean(0) >= 0.10
    norm = np.log1p(stacked / stacked.sum(1, keepdims=True).clip(1) * 1e4)
    var = np.where(detected, norm.var(0), -1.0)
    keep = sorted(np.argsort(-var)[: args.genes].tolist())
    genes = [shared[i] for i in keep]
    arrays: dict[str, np.ndarray] = {"genes": np.array(genes), "sections": np.array(SECTIONS)}
    for s in sections:
        cols = [s.genes.index(g) for g in genes]
        arrays[f"{s.name}/spots"] = np.array(s.spot_names)
        arrays[f"{s.name}/xy"] = s.xy.astype(np.float32)
        arrays[f"{s.name}/counts"] = s.counts[:, cols].astype(np.int32)
        arrays[f"{s.name}/patches.jpg"] = encode_patch_strip(s.patches)
    atomic_save_npz(args.out, arrays)
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB): {len(genes)} genes, "
        f"{sum(len(s.spot_names) for s in sections)} spots, spot diameter {SPOT_DIAMETER_PX} px"
    )


if __name__ == "__main__":
    main()
