"""Gene panels chosen on training slides only, the way ST-from-histology benchmarks choose them.

HEST-Benchmark and BLEEP/TRIPLEX-style evaluations predict a panel of genes: the most variable
(HVG) or the most expressed (HEG). Choosing the panel on every section, the held-out one included,
leaks the test section's variability into the task; here a panel is always a function of the
training slides alone.

Both rank the genes every training slide measured, leaving out mitochondrial and ribosomal genes
(``MT-``, ``RPS``/``RPL``, ``MRPS``/``MRPL``) and genes detected (count > 0) in fewer than
``min_detected`` of the training spots, on library-size normalised log1p expression
(:meth:`icml26.hist.data.Slide.expression`): HVG by variance over all training spots, HEG by mean.
"""

import re

import numpy as np

from icml26.hist.data import Slide

EXCLUDED = re.compile(r"^(MT-|RP[SL]\d|MRP[SL])")
"""Mitochondrial and ribosomal genes: left out of every panel."""


def _candidates(slides: list[Slide], min_detected: float, target_sum: float | None):
    if not slides or any(s.counts is None for s in slides):
        raise ValueError("gene panels need training slides with counts")
    if any(not s.genes for s in slides):
        raise ValueError("gene panels need gene names on every slide")
    shared = set.intersection(*(set(s.genes) for s in slides))
    genes = [g for g in slides[0].genes if g in shared and not EXCLUDED.match(g)]
    if not genes:
        raise ValueError("the training slides share no gene outside the excluded families")
    subset = [s.select_genes(genes) for s in slides]
    counts = np.concatenate([s.counts for s in subset])
    expr = np.concatenate([s.expression(target_sum) for s in subset]).astype(np.float64)
    detected = (counts > 0).mean(0) >= min_detected
    return genes, expr, detected


def _top(genes, score, detected, n: int, what: str) -> list[str]:
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ok = np.flatnonzero(detected)
    if len(ok) < n:
        raise ValueError(f"only {len(ok)} genes pass the detection filter, asked for {n} {what}")
    # stable: ties keep the slides' gene order
    order = ok[np.argsort(-score[ok], kind="stable")][:n]
    return [genes[i] for i in order]


def highly_variable_genes(
    slides: list[Slide], n: int = 50, min_detected: float = 0.1, target_sum: float | None = 1e4
) -> list[str]:
    """The ``n`` genes of largest variance of normalised log1p expression over the training
    spots (most variable first)."""
    genes, expr, detected = _candidates(slides, min_detected, target_sum)
    return _top(genes, expr.var(0), detected, n, "variable genes")


def highly_expressed_genes(
    slides: list[Slide], n: int = 50, min_detected: float = 0.1, target_sum: float | None = 1e4
) -> list[str]:
    """The ``n`` genes of largest mean normalised log1p expression over the training spots."""
    genes, expr, detected = _candidates(slides, min_detected, target_sum)
    return _top(genes, expr.mean(0), detected, n, "expressed genes")
