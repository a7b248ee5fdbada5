"""Slides: spots with positions, image features and counts; the HER2ST loader and featuriser.

Real data: HER2-positive breast tumour sections (legacy ST, square lattice, 100 um spots 200 um
apart) of Andersson et al., "Spatial deconvolution of HER2-positive breast cancer delineates
tumor-associated cell type interactions", Nat. Commun. 12, 6012 (2021); github almaan/her2st.
:func:`load_her2st` reads the original files (``<S>.tsv.gz`` counts, ``<S>_sel.tsv`` spots,
``<S>.jpg`` H&E) from any folder; :func:`load_her2st_subset` reads the small derived subset
bundled with this package (sections C2-C6, 101 genes, a 32 px patch per spot; see
``data/NOTICE.md``).

Image features: the demo downloads no pathology foundation model, so
:func:`featurise_patches` computes fixed colour and texture statistics of each spot's patch
(RGB and optical-density moments, haematoxylin / eosin densities from the Ruifrok-Johnston
colour deconvolution, gradient energy, background fraction). Pass your own per-spot features
(e.g. UNI or CONCH embeddings) as ``Slide.features`` to use a real encoder instead.
"""

import gzip
import io
import numbers
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import cached_property
from importlib import resources
from pathlib import Path

import numpy as np

from icml26.hist.lattice import to_lattice

SPOT_DIAMETER_PX = 145  # 100 um at the HER2ST scans' ~0.69 um/px (spot pitch ~290 px = 200 um)


@dataclass
class Slide:
    """One tissue section: N spots with positions, image features and (optionally) counts.

    xy: (N, 2) float spot centres (x, y) in any unit (pixels, um). features: (N, F) float32.
    counts: (N, G) non-negative raw counts, or None for a slide to predict (non-integer counts
    are accepted with a warning: log-normalised values would be transformed twice). genes: G
    unique names.
    step: spot pitch in the unit of xy, one or (x, y), each > 0 (None: inferred).
    hexagonal: Visium-style offset rows.
    library_size: (N,) total counts of each spot over *all* genes measured (None: the sum over
    the genes held in ``counts``); the denominator of library-size normalisation.
    sites: (N, 2) integer lattice sites (row, col) given by the data (Visium / Space Ranger
    ``array_row`` / ``array_col``); None: inferred from ``xy`` (:func:`to_lattice`).
    """

    name: str
    xy: np.ndarray
    features: np.ndarray
    counts: np.ndarray | None = None
    genes: list[str] = field(default_factory=list)
    spot_names: list[str] = field(default_factory=list)
    step: float | tuple[float, float] | None = None
    hexagonal: bool = False
    library_size: np.ndarray | None = None
    sites: np.ndarray | None = None

    def __post_init__(self):
        self.xy = np.asarray(self.xy, dtype=np.float64)
        self.features = np.asarray(self.features, dtype=np.float32)
        n = len(self.xy)
        if self.xy.ndim != 2 or self.xy.shape[1] != 2 or n == 0:
            raise ValueError(
                f"slide {self.name}: xy must have shape (N >= 1, 2), got {self.xy.shape}"
            )
        if self.features.ndim != 2 or len(self.features) != n:
            raise ValueError(
                f"slide {self.name}: features must have shape ({n}, F), got {self.features.shape}"
            )
        if not (np.isfinite(self.xy).all() and np.isfinite(self.features).all()):
            raise ValueError(f"slide {self.name}: xy or features contain NaN or inf")
        if self.counts is not None:
            self.counts = np.asarray(self.counts, dtype=np.float32)
            if self.counts.shape[0] != n or self.counts.ndim != 2:
                raise ValueError(
                    f"slide {self.name}: counts must have shape ({n}, G), got {self.counts.shape}"
                )
            if not np.isfinite(self.counts).all() or (self.counts < 0).any():
                raise ValueError(f"slide {self.name}: counts must be finite and >= 0")
            if (self.counts != np.round(self.counts)).any():
                # log-normalised values (scanpy's X after normalize_total + log1p) would be
                # normalised and logged again: the model would learn a double transform.
                # Non-integer counts can be legitimate (ambient-RNA corrected), so: a warning.
                warnings.warn(
                    f"slide {self.name}: counts are not integers (log-normalised data?); they "
                    "are normalised and log1p-transformed again. Pass raw counts (--layer "
                    "counts / --use-raw, or layer= / use_raw= in from_anndata)",
                    UserWarning,
                    stacklevel=3,
                )
            if self.genes and len(self.genes) != self.counts.shape[1]:
                raise ValueError(
                    f"slide {self.name}: {len(self.genes)} gene names for "
                    f"{self.counts.shape[1]} count columns"
                )
        if len(set(self.genes)) != len(self.genes):  # a gene panel is matched by name
            twice = sorted(g for g, k in Counter(self.genes).items() if k > 1)[:5]
            raise ValueError(f"slide {self.name}: gene names must be unique, {twice} repeat")
        if self.step is not None:
            steps = self.step if isinstance(self.step, tuple | list) else (self.step,)
            if len(steps) not in (1, 2) or not all(
                isinstance(v, numbers.Real) and not isinstance(v, bool) and np.isfinite(v) and v > 0
                for v in steps
            ):
                raise ValueError(f"slide {self.name}: step must be a finite pitch > 0 or (x, y) "
                                 f"pair of them, got {self.step!r}")  # fmt: skip
        if self.library_size is not None:
            self.library_size = np.asarray(self.library_size, dtype=np.float64)
            if self.library_size.shape != (n,):
                raise ValueError(
                    f"slide {self.name}: library_size must have shape ({n},), "
                    f"got {self.library_size.shape}"
                )
            if not (np.isfinite(self.library_size).all() and (self.library_size >= 0).all()):
                raise ValueError(f"slide {self.name}: library_size must be finite and >= 0")
        if self.sites is not None:
            sites = np.asarray(self.sites)
            if sites.shape != (n, 2) or not np.issubdtype(sites.dtype, np.integer):
                raise ValueError(
                    f"slide {self.name}: sites must be (N, 2) integers, got {sites.shape} "
                    f"{sites.dtype}"
                )
            sites = sites.astype(np.int64) - sites.min(0)
            if len(np.unique(sites, axis=0)) != n:
                raise ValueError(f"slide {self.name}: two spots share a lattice site in sites")
            self.sites = sites
        if not self.spot_names:
            self.spot_names = [f"spot{i}" for i in range(n)]
        if len(self.spot_names) != n:
            raise ValueError(f"slide {self.name}: {len(self.spot_names)} spot names for {n} spots")

    def __len__(self) -> int:
        return len(self.xy)

    @classmethod
    def from_anndata(
        cls,
        adata,
        features_key: str = "features",
        name: str | None = None,
        step: float | None = None,
        hexagonal: bool | None = None,
        layer: str | None = None,
        use_raw: bool = False,
        genes: list[str] | None = None,
    ) -> "Slide":
        """A slide from an AnnData (as scanpy / squidpy / Space Ranger readers give it).

        Positions: ``obsm["spatial"]``; lattice sites: ``obs["array_row"]`` and
        ``obs["array_col"]`` when present (Visium's doubled column index is halved on its
        hexagonal grid, detected from the column parity of each row unless ``hexagonal`` says),
        else inferred from the positions. Features: ``obsm[features_key]`` (e.g. UNI
        embeddings). Counts: ``X``, ``layers[layer]`` or ``.raw`` (``use_raw``), restricted to
        ``genes`` (by name) before anything is densified; the library size is the total over
        every gene of that matrix. No counts (a slide to predict): an AnnData whose ``X`` is None.
        """
        label = name or str(adata.uns.get("name", "slide"))
        for key in ("spatial", features_key):
            if key not in adata.obsm:
                raise ValueError(
                    f"AnnData {label}: no obsm[{key!r}] (has {list(adata.obsm.keys())})"
                )
        if layer is not None and use_raw:
            raise ValueError("choose counts from a layer or from .raw, not both")
        var_names = adata.var_names
        if use_raw:
            if adata.raw is None:
                raise ValueError(f"AnnData {label}: use_raw but .raw is empty")
            x, var_names = adata.raw.X, adata.raw.var_names
        elif layer is not None:
            if layer not in adata.layers:
                raise ValueError(
                    f"AnnData {label}: no layers[{layer!r}] (has {list(adata.layers.keys())})"
                )
            x = adata.layers[layer]
        else:
            x = adata.X
        counts, library_size, names = None, None, [str(g) for g in var_names]
        if x is not None:
            library_size = np.asarray(x.sum(1)).ravel()
            if genes is not None:
                index = {g: j for j, g in enumerate(names)}
                missing = [g for g in genes if g not in index]
                if missing:
                    raise ValueError(f"AnnData {label}: genes not found: {missing[:5]}")
                x = x[:, [index[g] for g in genes]]
                names = list(genes)
            counts = np.asarray(x.toarray() if hasattr(x, "toarray") else x)
        sites = None
        if "array_row" in adata.obs and "array_col" in adata.obs:
            rows = np.asarray(adata.obs["array_row"], dtype=np.int64)
            cols = np.asarray(adata.obs["array_col"], dtype=np.int64)
            hex_grid = _offset_parity(rows, cols) if hexagonal is None else hexagonal
            sites = np.stack([rows, cols // 2 if hex_grid else cols], 1)
            hexagonal = hex_grid
        return cls(
            name=label,
            xy=np.asarray(adata.obsm["spatial"])[:, :2],
            features=np.asarray(adata.obsm[features_key]),
            counts=counts,
            genes=names,
            spot_names=[str(s) for s in adata.obs_names],
            step=step,
            hexagonal=bool(hexagonal),
            library_size=library_size,
            sites=sites,
        )

    @cached_property
    def coords(self) -> np.ndarray:
        """(N, 2) int64 lattice sites (row, col): ``sites`` when the data gave them, else
        :func:`to_lattice` of ``xy``."""
        if self.sites is not None:
            return self.sites
        return to_lattice(self.xy, self.step, hexagonal=self.hexagonal).coords

    def expression(self, target_sum: float | None = 1e4) -> np.ndarray:
        """(N, G) log1p expression: ``log1p(counts / library_size * target_sum)`` (scanpy's
        ``normalize_total`` + ``log1p``), or ``log1p(counts)`` with ``target_sum=None``."""
        if self.counts is None:
            raise ValueError(f"slide {self.name} has no counts")
        counts = self.counts.astype(np.float64)
        if target_sum is None:
            return np.log1p(counts).astype(np.float32)
        lib = self.library_size if self.library_size is not None else counts.sum(1)
        scale = np.divide(target_sum, lib, out=np.zeros_like(lib, dtype=np.float64), where=lib > 0)
        return np.log1p(counts * scale[:, None]).astype(np.float32)

    def select_genes(self, genes: list[str]) -> "Slide":
        """This slide with its counts restricted to (and ordered as) ``genes``, matched by name;
        the library size is kept (it counts every gene measured)."""
        if self.counts is None:
            raise ValueError(f"slide {self.name} has no counts to select genes from")
        index = {g: j for j, g in enumerate(self.genes)}
        missing = [g for g in genes if g not in index]
        if missing:
            raise ValueError(
                f"slide {self.name} lacks {len(missing)} of the genes asked for "
                f"(e.g. {missing[:5]})"
            )
        lib = self.library_size if self.library_size is not None else self.counts.sum(1)
        return replace(
            self,
            counts=self.counts[:, [index[g] for g in genes]],
            genes=list(genes),
            library_size=lib,
        )


def _offset_parity(rows: np.ndarray, cols: np.ndarray) -> bool:
    """Visium's hexagonal grid in array coordinates: within a row every column index has one
    parity, and it flips from row to row (the doubled column index of an offset lattice)."""
    parity = (cols - rows) % 2
    return len(rows) > 1 and bool((parity == parity[0]).all())


# ----------------------------------------------------------------------------- HER2ST files


@dataclass
class HER2Section:
    """One HER2ST section as read from the original files."""

    name: str
    spot_names: list[str]
    xy: np.ndarray  # (N, 2) pixel_x, pixel_y
    counts: np.ndarray  # (N, G) int
    genes: list[str]
    patches: np.ndarray  # (N, P, P, 3) uint8


def _read_spots(path: Path) -> dict[str, tuple[float, float]]:
    lines = path.read_text().splitlines()
    if not lines:
        raise ValueError(f"{path}: empty spot file")
    header = lines[0].split("\t")
    need = ("x", "y", "pixel_x", "pixel_y")
    missing = [c for c in need if c not in header]
    if missing:
        raise ValueError(f"{path}:1: spot file header lacks column(s) {missing}")
    col = {c: header.index(c) for c in (*need, "selected") if c in header}
    spots = {}
    for lineno, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        f = line.split("\t")
        if len(f) != len(header):
            raise ValueError(f"{path}:{lineno}: {len(f)} fields, header has {len(header)}")
        try:
            x, y = int(float(f[col["x"]])), int(float(f[col["y"]]))
            px, py = float(f[col["pixel_x"]]), float(f[col["pixel_y"]])
        except ValueError:
            raise ValueError(f"{path}:{lineno}: x, y, pixel_x, pixel_y must be numbers") from None
        if not (np.isfinite(px) and np.isfinite(py)):
            raise ValueError(f"{path}:{lineno}: pixel coordinates must be finite")
        if "selected" in col and f[col["selected"]].strip() not in ("1", "1.0", "True"):
            continue
        spots[f"{x}x{y}"] = (px, py)
    if not spots:
        raise ValueError(f"{path}: no selected spots")
    return spots


def _read_counts(path: Path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        if len(header) < 2:
            raise ValueError(f"{path}:1: count file header must list gene names")
        genes = header[1:]
        names, rows = [], []
        for lineno, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            f = line.rstrip("\n").split("\t")
            if len(f) != len(header):
                raise ValueError(f"{path}:{lineno}: {len(f)} fields, header has {len(header)}")
            try:
                row = np.array(f[1:], dtype=np.float64)
            except ValueError:
                raise ValueError(f"{path}:{lineno}: counts must be numbers") from None
            if not np.isfinite(row).all() or (row < 0).any() or (row != np.round(row)).any():
                raise ValueError(f"{path}:{lineno}: counts must be non-negative integers")
            names.append(f[0])
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no spots")
    return names, genes, np.stack(rows).astype(np.int64)


def _crop_patches(image_path: Path, xy: np.ndarray, patch_px: int) -> np.ndarray:
    from PIL import Image

    old = Image.MAX_IMAGE_PIXELS
    Image.MAX_IMAGE_PIXELS = 4 * 10**8  # the scans are ~9.5k px square, over PIL's default
    try:
        with Image.open(image_path) as im:
            im = im.convert("RGB")
            r = SPOT_DIAMETER_PX / 2
            out = [
                np.asarray(
                    im.crop((int(x - r), int(y - r), int(x + r), int(y + r))).resize(
                        (patch_px, patch_px), Image.BOX
                    )
                )
                for x, y in xy
            ]
    finally:
        Image.MAX_IMAGE_PIXELS = old
    return np.stack(out).astype(np.uint8)


def her2st_files(root: str | Path, section: str) -> dict[str, Path]:
    """The count, spot and image files of a HER2ST section under ``root``.

    Two layouts are read: the files side by side (``<S>.tsv.gz``, ``<S>_selection.tsv`` or
    ``<S>_sel.tsv``, ``<S>.jpg``), and the published repository's ``data/`` folder
    (``ST-cnts/<S>.tsv.gz``, ``ST-spotfiles/<S>_selection.tsv``, ``ST-imgs/<letter>/<S>/*.jpg``
    with one image), given as ``root`` or as its parent.
    """
    root = Path(root)
    bases = [root, root / "data"]
    candidates: dict[str, list[Path]] = {"counts": [], "spots": [], "image": []}
    for b in bases:
        candidates["counts"] += [b / f"{section}.tsv.gz", b / "ST-cnts" / f"{section}.tsv.gz"]
        candidates["spots"] += [
            b / f"{section}_selection.tsv",
            b / f"{section}_sel.tsv",
            b / "ST-spotfiles" / f"{section}_selection.tsv",
        ]
        candidates["image"].append(b / f"{section}.jpg")
        folder = b / "ST-imgs" / section[:1] / section
        if folder.is_dir():
            jpgs = sorted(folder.glob("*.jpg"))
            if len(jpgs) > 1:
                raise ValueError(f"{folder}: {len(jpgs)} .jpg files, expected the section's one")
            candidates["image"] += jpgs
    files = {}
    for kind, paths in candidates.items():
        found = next((p for p in paths if p.is_file()), None)
        if found is None:
            tried = ", ".join(str(p) for p in paths[:3])
            raise ValueError(
                f"{paths[0]} not found: no HER2ST {kind} file for section {section!r} under "
                f"{root} (tried {tried}, ...; expected <S>.tsv.gz, <S>_selection.tsv, <S>.jpg "
                "side by side, or the repository's data/ST-cnts, ST-spotfiles, ST-imgs)"
            )
        files[kind] = found
    return files


def load_her2st(root: str | Path, section: str, patch_px: int = 32, genes=None) -> HER2Section:
    """Read one HER2ST section from the original files under ``root`` (``her2st_files``).

    Keeps the spots listed (and selected) in the section's spot-selection file that have
    counts; ``genes`` restricts the columns (None: all). Malformed files raise ValueError naming
    file and line.
    """
    files = her2st_files(root, section)
    spots = _read_spots(files["spots"])
    names, all_genes, counts = _read_counts(files["counts"])
    keep = [i for i, n in enumerate(names) if n in spots]
    if not keep:
        raise ValueError(f"{files['counts']}: no spot matches {files['spots']}")
    names = [names[i] for i in keep]
    counts = counts[keep]
    if genes is not None:
        missing = [g for g in genes if g not in all_genes]
        if missing:
            raise ValueError(f"{files['counts']}: genes not found: {missing[:5]}")
        counts = counts[:, [all_genes.index(g) for g in genes]]
        all_genes = list(genes)
    xy = np.array([spots[n] for n in names])
    patches = _crop_patches(files["image"], xy, patch_px)
    return HER2Section(section, names, xy, counts, list(all_genes), patches)


def load_her2st_subset() -> dict[str, Slide]:
    """The bundled HER2ST subset as featurised slides: {"C2": Slide, ..., "C6": Slide}."""
    blob = resources.files("icml26.hist").joinpath("data/her2st_subset.npz").read_bytes()
    z = np.load(io.BytesIO(blob), allow_pickle=False)
    genes = [str(g) for g in z["genes"]]
    slides = {}
    for s in (str(x) for x in z["sections"]):
        slides[s] = Slide(
            name=s,
            xy=z[f"{s}/xy"],
            features=featurise_patches(decode_patch_strip(z[f"{s}/patches.jpg"])),
            counts=z[f"{s}/counts"],
            genes=genes,
            spot_names=[str(n) for n in z[f"{s}/spots"]],
            library_size=z[f"{s}/library_size"],
        )
    return slides


def encode_patch_strip(patches: np.ndarray, quality: int = 92) -> np.ndarray:
    """(N, P, P, 3) uint8 -> JPEG bytes (as uint8 array) of the patches stacked vertically."""
    from PIL import Image

    n, p = patches.shape[:2]
    if p % 8:
        raise ValueError(f"patch size {p} must be a multiple of 8 (the JPEG block)")
    buf = io.BytesIO()
    Image.fromarray(patches.reshape(n * p, p, 3)).save(buf, "JPEG", quality=quality, subsampling=0)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


def decode_patch_strip(blob: np.ndarray) -> np.ndarray:
    """Inverse of :func:`encode_patch_strip`: -> (N, P, P, 3) uint8."""
    from PIL import Image

    strip = np.asarray(Image.open(io.BytesIO(blob.tobytes())).convert("RGB"))
    p = strip.shape[1]
    return strip.reshape(-1, p, p, 3)


# ----------------------------------------------------------------------------- featuriser

# Ruifrok & Johnston (2001) stain vectors (haematoxylin, eosin, DAB) in optical density space.
_HED = np.array([[0.65, 0.70, 0.29], [0.07, 0.99, 0.11], [0.27, 0.57, 0.78]])
_HED = _HED / np.linalg.norm(_HED, axis=1, keepdims=True)
_HED_INV = np.linalg.inv(_HED)


def featurise_patches(patches: np.ndarray) -> np.ndarray:
    """(N, P, P, 3) uint8 RGB patches -> (N, 24) float32 colour / texture statistics.

    Per spot: RGB mean and std (6); optical density mean and std (6); haematoxylin and eosin
    concentration mean, std and 90th percentile (6; nuclei density and stroma); grey-level
    gradient energy at two scales (2); fraction of background (near-white) pixels (1);
    haematoxylin-eosin correlation (1); grey-level entropy proxy (2: std of the 4x4 block means,
    mean of block stds). A fixed, documented featuriser, not a learned one.
    """
    p = np.asarray(patches)
    if p.ndim != 4 or p.shape[-1] != 3:
        raise ValueError(f"patches must have shape (N, P, P, 3), got {p.shape}")
    x = p.astype(np.float64) / 255.0
    n = len(x)
    flat = x.reshape(n, -1, 3)
    od = -np.log((flat * 255 + 1) / 256)
    hed = od @ _HED_INV
    h, e = hed[..., 0], hed[..., 1]
    grey = x.mean(-1)
    gy, gx = np.gradient(grey, axis=(1, 2))
    g2 = grey[:, ::2, ::2]
    gy2, gx2 = np.gradient(g2, axis=(1, 2))
    b = grey.shape[1] // 4
    blocks = grey[:, : 4 * b, : 4 * b].reshape(n, 4, b, 4, b).transpose(0, 1, 3, 2, 4)
    blocks = blocks.reshape(n, 16, -1)
    hc = h - h.mean(1, keepdims=True)
    ec = e - e.mean(1, keepdims=True)
    corr = (hc * ec).mean(1) / (hc.std(1) * ec.std(1) + 1e-8)
    feats = [
        flat.mean(1),
        flat.std(1),
        od.mean(1),
        od.std(1),
        np.stack(
            [
                h.mean(1),
                h.std(1),
                np.quantile(h, 0.9, axis=1),
                e.mean(1),
                e.std(1),
                np.quantile(e, 0.9, axis=1),
            ],
            1,
        ),
        np.stack(
            [
                np.sqrt(gx**2 + gy**2).mean((1, 2)),
                np.sqrt(gx2**2 + gy2**2).mean((1, 2)),
                (flat.min(-1) > 0.85).mean(1),
                corr,
                blocks.mean(-1).std(1),
                blocks.std(-1).mean(1),
            ],
            1,
        ),
    ]
    return np.concatenate(feats, 1).astype(np.float32)
