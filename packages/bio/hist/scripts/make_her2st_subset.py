"""Rebuild the bundled HER2ST subset (``src/icml26/hist/data/her2st_subset.npz``).

    uv run --package icml26-hist python packages/bio/hist/scripts/make_her2st_subset.py \
        /path/to/her2st  [--genes 50] [--patch 32]

Reads sections C2-C6 with :func:`icml26.hist.data.load_her2st` (the original count, spot and
image files of Andersson et al., Nat. Commun. 2021). For every leave-one-section-out fold it
chooses, on the four training sections only, the ``--genes`` most variable and the ``--genes``
most expressed genes (:mod:`icml26.hist.genes`); the bundle keeps the union of these panels over
the folds, so any fold's panel, recomputed from the bundle's training sections, is the panel of
the full data. It stores per spot its raw counts for those genes, its library size (total counts
over every gene measured: the denominator of normalisation), its pixel coordinates and an RGB
patch of the spot (one spot diameter, 100 um ~ 145 px at this
scan's resolution, box-resampled to ``--patch`` px). The patches of a section are stored as one
vertical strip, JPEG quality 92 without chroma subsampling (patch edges on the 8 px block grid,
so no block straddles two spots): about a megabyte for the whole subset.
"""

import argparse
from pathlib import Path

import numpy as np

from icml26.hist.data import SPOT_DIAMETER_PX, Slide, encode_patch_strip, load_her2st
from icml26.hist.genes import highly_expressed_genes, highly_variable_genes
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
    slides = [
        Slide(s.name, s.xy, np.zeros((len(s.xy), 1)), s.counts, s.genes, s.spot_names)
        for s in sections
    ]
    pool: set[str] = set()
    for held in SECTIONS:
        train = [s for s in slides if s.name != held]
        pool |= set(highly_variable_genes(train, args.genes))
        pool |= set(highly_expressed_genes(train, args.genes))
    genes = [g for g in slides[0].genes if g in pool]
    arrays: dict[str, np.ndarray] = {"genes": np.array(genes), "sections": np.array(SECTIONS)}
    for s in sections:
        cols = [s.genes.index(g) for g in genes]
        arrays[f"{s.name}/spots"] = np.array(s.spot_names)
        arrays[f"{s.name}/xy"] = s.xy.astype(np.float32)
        arrays[f"{s.name}/counts"] = s.counts[:, cols].astype(np.int32)
        arrays[f"{s.name}/library_size"] = s.counts.sum(1).astype(np.int64)
        arrays[f"{s.name}/patches.jpg"] = encode_patch_strip(s.patches)
    atomic_save_npz(args.out, arrays)
    print(
        f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB): {len(genes)} genes, "
        f"{sum(len(s.spot_names) for s in sections)} spots, spot diameter {SPOT_DIAMETER_PX} px"
    )


if __name__ == "__main__":
    main()
