"""Spot coordinates -> integer lattice sites, and the corner sentinels (HiST, Sec. "Input").

HiST works on the *active sites* of an integer lattice: one site per measured spot. Legacy ST
and Visium HD spots already sit on a square grid; Visium's hexagonal grid (rows offset by half a
spot) maps to an offset lattice by halving the doubled column index. Rotations and shears used as
augmentation, and imperfect scanner coordinates, can send two spots to one site; the documented
rule below moves all but one of them to the nearest free site, independently of input order.
"""

from dataclasses import dataclass

import numpy as np
import torch


@dataclass(frozen=True)
class Lattice:
    """Result of :func:`to_lattice`.

    coords: (N, 2) int64 (row, col) lattice sites, min 0 on both axes, in the input order.
    step: the centre-to-centre spacing used (one pitch or (x, y)), in the input's units.
    moved: (N,) bool, spots that lost a collision and were moved to the nearest free site.
    """

    coords: np.ndarray
    step: float | tuple[float, float]
    moved: np.ndarray


def estimate_step(xy: np.ndarray, *, hexagonal: bool = False) -> float | tuple[float, float]:
    """The spots' centre-to-centre spacing, from the distances to their lattice neighbours.

    Square grids: (step_x, step_y), the median |dx| of horizontal and |dy| of vertical neighbour
    pairs; a scan that is a few percent anisotropic would otherwise drift by a site every few
    dozen columns and collide. Hexagonal grids: one pitch, the
    median distance to the six neighbours. Neighbours: within 1.5x the median nearest-neighbour
    distance (the nearest alone is biased low under scanner jitter).
    """
    from scipy.spatial import cKDTree

    xy = np.asarray(xy, dtype=np.float64)
    if len(xy) < 2:
        raise ValueError("estimate_step needs at least 2 spots; pass step= explicitly")
    dist, idx = cKDTree(xy).query(xy, k=min(7, len(xy)))
    d0 = np.median(dist[:, 1])
    if not d0 > 0:
        raise ValueError("every spot shares its position with another; cannot infer the step")
    near = (dist[:, 1:] <= 1.5 * d0) & np.isfinite(dist[:, 1:])
    if hexagonal:
        return float(np.median(dist[:, 1:][near]))
    vec = np.abs(xy[np.minimum(idx[:, 1:], len(xy) - 1)] - xy[:, None, :])
    horizontal = near & (vec[..., 1] < 0.5 * vec[..., 0])
    vertical = near & (vec[..., 0] < 0.5 * vec[..., 1])
    sx = np.median(vec[..., 0][horizontal]) if horizontal.any() else d0
    sy = np.median(vec[..., 1][vertical]) if vertical.any() else d0
    return float(sx), float(sy)


def to_lattice(
    xy: np.ndarray,
    step: float | tuple[float, float] | None = None,
    *,
    hexagonal: bool = False,
) -> Lattice:
    """Map spot positions ``xy`` (N, 2) = (x, y) to integer lattice sites (row, col).

    Square grids: ``row = round((y - min y) / step_y)``, ``col = round((x - min x) / step_x)``
    (``step`` one pitch or (step_x, step_y)).
    Hexagonal grids (Visium: ``step`` is the centre-to-centre distance, rows ``step * sqrt(3)/2``
    apart, alternate rows offset by ``step / 2``): ``row`` as above with the row spacing and
    ``col = round(2 (x - min x) / step) // 2``, the offset lattice. ``step=None`` infers the
    spacing (:func:`estimate_step`).

    Collisions (two spots on one site): the spot closest to the site's centre keeps it (ties:
    smaller x, then smaller y); the others, nearest to their site first, each take the free site
    closest to their own position (ties: smaller row, then col). The rule depends only on the
    positions, so permuting the input permutes the output.
    """
    xy = np.asarray(xy, dtype=np.float64)
    if xy.ndim != 2 or xy.shape[1] != 2:
        raise ValueError(f"xy must have shape (N, 2), got {xy.shape}")
    if len(xy) == 0:
        raise ValueError("xy is empty: a slide needs at least one spot")
    if not np.isfinite(xy).all():
        raise ValueError("xy contains NaN or inf")
    if step is None:
        step = estimate_step(xy, hexagonal=hexagonal)
    sx, sy = (step, step) if np.isscalar(step) else tuple(step)
    if not all(np.isfinite(v) and v > 0 for v in (sx, sy)):
        raise ValueError(f"step must be a positive number or (x, y) pair, got {step}")
    if hexagonal and sx != sy:
        raise ValueError("hexagonal grids take one pitch, not (step_x, step_y)")
    rel = xy - xy.min(0)
    if hexagonal:
        row_f = rel[:, 1] / (sx * np.sqrt(3) / 2)
        half = np.rint(2 * rel[:, 0] / sx)
        rows, cols = np.rint(row_f), np.floor(half / 2)
        # where a spot sits in offset-lattice units, for measuring "nearest" in collisions
        pos = np.stack([row_f, rel[:, 0] / sx - (half % 2) / 2], axis=1)
    else:
        pos = np.stack([rel[:, 1] / sy, rel[:, 0] / sx], axis=1)
        rows, cols = np.rint(pos[:, 0]), np.rint(pos[:, 1])
    coords = np.stack([rows, cols], axis=1).astype(np.int64)
    moved = np.zeros(len(xy), dtype=bool)
    resid = np.linalg.norm(pos - coords, axis=1)
    # canonical order: who keeps a contested site does not depend on the input order
    order = np.lexsort((xy[:, 1], xy[:, 0], resid))
    taken: set[tuple[int, int]] = set()
    losers = []
    for i in order:
        site = (int(coords[i, 0]), int(coords[i, 1]))
        if site in taken:
            losers.append(i)
        else:
            taken.add(site)
    for i in losers:  # already nearest-first (order is sorted by residual)
        coords[i] = _nearest_free(pos[i], coords[i], taken)
        taken.add((int(coords[i, 0]), int(coords[i, 1])))
        moved[i] = True
    if (coords < 0).any():  # a displaced spot at the border may step outside; shift back
        coords -= coords.min(0).clip(max=0)
    return Lattice(coords=coords, step=step if np.isscalar(step) else (sx, sy), moved=moved)


def _nearest_free(pos: np.ndarray, site: np.ndarray, taken: set) -> np.ndarray:
    r = 1
    while (best := _best_in_ring(pos, site, taken, r)) is None:
        r += 1
    # a free site one ring further out can still be closer in Euclidean distance (by < sqrt 2)
    extra = _best_in_ring(pos, site, taken, r + 1)
    if extra is not None and extra < best:
        best = extra
    return np.array(best[1:], dtype=np.int64)


def _best_in_ring(pos, site, taken, r):
    """The free site at Chebyshev radius ``r`` nearest to ``pos``: (dist², row, col) or None."""
    best = None
    for dr in range(-r, r + 1):
        for dc in range(-r, r + 1):
            if max(abs(dr), abs(dc)) != r:
                continue
            cand = (int(site[0]) + dr, int(site[1]) + dc)
            if cand in taken:
                continue
            key = ((cand[0] - pos[0]) ** 2 + (cand[1] - pos[1]) ** 2, cand[0], cand[1])
            if best is None or key < best:
                best = key
    return best


def check_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``; a named ValueError otherwise (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return int(value)


def check_sites(coords, real=None, *, name: str = "coords") -> None:
    """The lattice-site arguments of the graph builders: ``coords`` an (N, 2) integer tensor and
    ``real`` an (N,) bool tensor; a named error otherwise. Shapes and dtypes only, so the check
    costs no device sync inside the forward pass."""
    if not isinstance(coords, torch.Tensor):
        raise TypeError(f"{name} must be a torch tensor of (N, 2) lattice sites, got "
                        f"{type(coords).__name__}")  # fmt: skip
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError(f"{name} must have shape (N, 2), got {tuple(coords.shape)}")
    if coords.is_floating_point() or coords.is_complex() or coords.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer lattice sites (see to_lattice), got "
                        f"{coords.dtype}")  # fmt: skip
    if real is None:
        return
    if not isinstance(real, torch.Tensor) or real.dtype != torch.bool:
        got = real.dtype if isinstance(real, torch.Tensor) else type(real).__name__
        raise TypeError(f"real must be a bool tensor (True: a spot, False: a sentinel), got {got}")
    if tuple(real.shape) != (len(coords),):
        raise ValueError(f"real must have shape ({len(coords)},) to match {name}, got "
                         f"{tuple(real.shape)}")  # fmt: skip


def add_sentinels(coords: torch.Tensor, levels: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Frame the slide with two zero-feature sentinel sites so every stride-2 stage aligns.

    Shifts the sites by +1 and adds one sentinel at (0, 0) and one at the far corner of the
    canvas rounded up to a multiple of ``2**(levels-1)``, so the dyadic grid of every stage is
    anchored at the slide's frame, not at whichever spot happens to be outermost (which spot
    dropout and augmentation change). Returns (coords (N + 2, 2), is_sentinel (N + 2,)); the
    sentinels come last and are dropped before the head.
    """
    check_sites(coords)
    m = 2 ** (check_int("levels", levels) - 1)
    inner = coords.long() + 1
    far = ((inner.max(0).values + 2 + m - 1) // m) * m - 1  # strictly beyond every spot
    out = torch.cat(
        [inner, torch.zeros(1, 2, dtype=torch.long, device=coords.device), far.view(1, 2)]
    )
    is_sentinel = torch.zeros(len(out), dtype=torch.bool, device=coords.device)
    is_sentinel[-2:] = True
    return out, is_sentinel


def unique_sites(coords: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(coords, dim=0, return_inverse=True)`` for (N, 2) integer sites, through a
    1-D row-major key (``unique(dim=0)`` takes a slow per-row path on CPU)."""
    lo = coords.min(0).values
    c = coords - lo
    width = int(c[:, 1].max()) + 1 if len(c) else 1
    keys, inverse = torch.unique(c[:, 0] * width + c[:, 1], return_inverse=True)
    uniq = torch.stack([torch.div(keys, width, rounding_mode="floor"), keys % width], 1) + lo
    return uniq, inverse
