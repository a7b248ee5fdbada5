"""Synthetic slides whose expression needs the three things HiST is built to see.

For a spot i at lattice position c_i of slide s, with a fixed random "biology" shared by all
slides (seeded by ``world_seed``):

    u_i ~ N(0, I_6)              local cell state, visible in the spot's own features
    f(c_i) in R^2                fine smooth fields (length ~3 spots), zero mean over the slide
    g(c_i) in R^2                coarse smooth fields (length ~12 spots), zero mean over the slide
    b_s ~ N(0, I_2)              per-slide batch shift (stain / protocol / patient)
    features x_i = P_u u_i + P_f (f(c_i) + eps_i) + P_g (g(c_i) + b_s) + 0.3 noise,  eps_i ~ N(0, I)
    log mean eta_i = base + W_u u_i + W_f tanh(1.5 f(c_i)) + W_g tanh(1.5 g(c_i)) + W_b b_s
    counts ~ Poisson(exp(eta_i))

* the **local term** W_u u_i is read off the spot's own features;
* the **multi-scale term**: the fine field is hidden under per-spot noise eps_i and is recovered
  by averaging a small neighbourhood; the coarse field needs a large one;
* the **batch shift** moves the features along the same directions as the coarse field, so no
  neighbourhood smaller than the slide can tell a stain shift from coarse tissue content; the
  expression depends on the two through different maps (W_g, W_b). Over the whole slide the
  coarse field averages to zero, so the slide's own feature mean reveals P_g b_s: what the slide
  calibration tokens, initialised from the feature pools, can pick up.

Two variants split the batch shift (``SyntheticWorld(stain_shift=, biology_shift=)`` scale b_s in
the features and in the expression): a **stain shift** alone (the features move, the expression
does not: the slide's feature mean tells the model what to subtract) and a **biology shift**
alone (the expression moves and nothing in the features shows it: no slide summary can help, so
calibration tokens must not help either, a null control).

Tissue outlines are random smooth blobs; lattices are square (legacy ST, Visium HD) or
hexagonal (Visium, rows offset by half a pitch).
"""

from dataclasses import dataclass

import numpy as np

from icml26.hist.data import Slide


@dataclass(frozen=True)
class SyntheticWorld:
    """The fixed maps shared by every slide of one synthetic cohort."""

    num_features: int = 32
    num_genes: int = 50
    world_seed: int = 0
    stain_shift: float = 1.0
    """Scale of the slide shift b_s in the features (P_g b_s); 0: no stain shift."""
    biology_shift: float = 1.0
    """Scale of the slide shift b_s in the expression (W_b b_s); 0: no biological shift."""

    def __post_init__(self):
        for name in ("num_features", "num_genes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name in ("stain_shift", "biology_shift"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < float("inf"):
                raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")

    def maps(self):
        r = np.random.default_rng(self.world_seed)
        f, g = self.num_features, self.num_genes
        return {
            "P_u": r.normal(0, 1 / np.sqrt(6), (f, 6)),
            "P_f": r.normal(0, 1 / np.sqrt(2), (f, 2)),
            "P_g": r.normal(0, 1 / np.sqrt(2), (f, 2)),
            "W_u": r.normal(0, 0.45 / np.sqrt(6), (g, 6)),
            "W_f": r.normal(0, 0.6 / np.sqrt(2), (g, 2)),
            "W_g": r.normal(0, 0.6 / np.sqrt(2), (g, 2)),
            "W_b": r.normal(0, 0.6 / np.sqrt(2), (g, 2)),
            "base": np.log(r.uniform(1.0, 20.0, g)),
        }


def _blob_mask(pos: np.ndarray, radius: float, r: np.random.Generator) -> np.ndarray:
    """Points inside a random smooth star-shaped blob of mean radius ``radius``."""
    d = pos - pos.mean(0)
    ang, rad = np.arctan2(d[:, 1], d[:, 0]), np.hypot(d[:, 0], d[:, 1])
    shape = np.ones_like(ang)
    for k in (2, 3, 5):
        shape += r.normal(0, 0.12) * np.cos(k * ang + r.uniform(0, 2 * np.pi))
    return rad <= radius * shape


def _fields(pos: np.ndarray, r: np.random.Generator, length: float) -> np.ndarray:
    """(N, 2) smooth random fields (random Fourier features), zero mean and unit variance over
    the slide."""
    out = []
    for _ in range(2):
        k = 24
        w = r.normal(0, 1 / length, (k, 2))
        phase = r.uniform(0, 2 * np.pi, k)
        field = np.cos(pos @ w.T + phase).sum(1)
        out.append((field - field.mean()) / (field.std() + 1e-8))
    return np.stack(out, 1)


def make_slide(
    num_spots: int,
    seed: int,
    *,
    hexagonal: bool = False,
    world: SyntheticWorld = SyntheticWorld(),
    pitch: float = 100.0,
    name: str | None = None,
) -> Slide:
    """One synthetic slide with about ``num_spots`` spots (positions in um, ``pitch`` apart)."""
    if isinstance(num_spots, bool) or not isinstance(num_spots, int) or num_spots < 1:
        raise ValueError(f"num_spots must be a positive int, got {num_spots!r}")
    if not isinstance(pitch, int | float) or not 0 < pitch < float("inf"):
        raise ValueError(f"pitch must be a positive number (um), got {pitch!r}")
    r = np.random.default_rng([world.world_seed, seed])
    m = world.maps()
    side = int(np.ceil(np.sqrt(num_spots / 0.6))) + 4
    rows, cols = np.mgrid[0:side, 0:side]
    rows, cols = rows.ravel().astype(float), cols.ravel().astype(float)
    if hexagonal:
        pos = np.stack([rows * np.sqrt(3) / 2, cols + (rows % 2) / 2], 1)
    else:
        pos = np.stack([rows, cols], 1)
    # grow the blob until it holds num_spots sites, then keep the num_spots most central ones
    radius = np.sqrt(num_spots / np.pi) * (np.sqrt(3) / 2 if hexagonal else 1.0) ** -0.5
    for _ in range(50):
        inside = _blob_mask(pos, radius, np.random.default_rng([world.world_seed, seed, 1]))
        if inside.sum() >= num_spots:
            break
        radius *= 1.05
    cand = np.flatnonzero(inside)
    centre = pos[cand].mean(0)
    cand = cand[np.argsort(np.hypot(*(pos[cand] - centre).T), kind="stable")[:num_spots]]
    pos = pos[cand]
    n = len(pos)
    u = r.normal(size=(n, 6))
    f, g = _fields(pos, r, 3.0), _fields(pos, r, 12.0)
    b = r.normal(size=2)
    eps = r.normal(size=(n, 2))
    feats = (
        u @ m["P_u"].T
        + (f + eps) @ m["P_f"].T
        + (g + world.stain_shift * b) @ m["P_g"].T
        + 0.3 * r.normal(size=(n, world.num_features))
    )
    eta = (
        m["base"]
        + u @ m["W_u"].T
        + np.tanh(1.5 * f) @ m["W_f"].T
        + np.tanh(1.5 * g) @ m["W_g"].T
        + world.biology_shift * (m["W_b"] @ b)
    )
    counts = r.poisson(np.exp(eta))
    xy = pos[:, ::-1] * pitch  # (x, y) = (col, row) * pitch
    return Slide(
        name=name or f"synthetic-{'hex' if hexagonal else 'square'}-{seed}",
        xy=xy,
        features=feats,
        counts=counts,
        genes=[f"gene{j}" for j in range(world.num_genes)],
        step=pitch,
        hexagonal=hexagonal,
    )


def make_cohort(num_slides: int, num_spots: int, seed: int = 0, **kw) -> list[Slide]:
    """``num_slides`` slides alternating square and hexagonal lattices (seeds seed, seed+1...)."""
    if isinstance(num_slides, bool) or not isinstance(num_slides, int) or num_slides < 1:
        raise ValueError(f"num_slides must be a positive int, got {num_slides!r}")
    return [make_slide(num_spots, seed + i, hexagonal=bool(i % 2), **kw) for i in range(num_slides)]
