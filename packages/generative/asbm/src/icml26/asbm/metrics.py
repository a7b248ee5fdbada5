"""Sample-quality and path metrics: multi-bandwidth MMD, sliced Wasserstein-2, straightness, and
a Fréchet distance on a small in-package classifier's features (a proxy: no Inception weights
are available offline)."""

import functools
import itertools

import torch
from torch import nn


def check_samples(x, y, names: tuple[str, str] = ("x", "y"), same_size: bool = False):
    """Two sample sets (n, ...) and (m, ...) of one shape per sample, finite floats, n, m >= 2:
    returned flattened to (n, D) float64; a ValueError / TypeError naming the argument else."""
    out = []
    for v, name in zip((x, y), names, strict=True):
        if not isinstance(v, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of samples, got {type(v).__name__}")
        if not v.is_floating_point() or v.ndim < 2 or len(v) < 2:
            raise ValueError(f"{name} must hold >= 2 float samples (n, ...), got {v.dtype} "
                             f"{tuple(v.shape)}")  # fmt: skip
        if not bool(torch.isfinite(v).all()):
            raise ValueError(f"{name} holds NaN or inf")
        out.append(v.flatten(1).double())
    if out[0].shape[1] != out[1].shape[1] or x.shape[1:] != y.shape[1:]:
        raise ValueError(f"{names[0]} and {names[1]} must share the sample shape, got "
                         f"{tuple(x.shape[1:])} and {tuple(y.shape[1:])}")  # fmt: skip
    if same_size and len(x) != len(y):
        raise ValueError(f"{names[0]} and {names[1]} must hold as many samples, got {len(x)} "
                         f"and {len(y)}")  # fmt: skip
    return out


def mmd(x: torch.Tensor, y: torch.Tensor, bandwidths=(0.1, 0.2, 0.5, 1.0, 2.0, 5.0)) -> float:
    """Unbiased squared MMD with a sum of RBF kernels; bandwidths are multiples of the median
    pairwise distance of y (so the number is scale-free)."""
    x, y = check_samples(x, y)
    dyy = torch.cdist(y, y)
    med = dyy[dyy > 0].median()
    dxx, dxy = torch.cdist(x, x), torch.cdist(x, y)

    def k(d):
        return sum(torch.exp(-(d**2) / (2 * (b * med) ** 2)) for b in bandwidths)

    n, m = len(x), len(y)
    zero = torch.zeros((), device=x.device)
    kxx = (k(dxx).sum() - k(zero) * n) / (n * (n - 1))
    kyy = (k(dyy).sum() - k(zero) * m) / (m * (m - 1))
    return (kxx + kyy - 2 * k(dxy).mean()).item()


def sliced_w2(x: torch.Tensor, y: torch.Tensor, projections: int = 256, seed: int = 0) -> float:
    """Sliced Wasserstein-2 over random directions (equal sample sizes are subsampled)."""
    x, y = check_samples(x, y)
    n = min(len(x), len(y))
    # Subsets and directions come from a seeded CPU generator: the same on every device.
    g = torch.Generator().manual_seed(seed)
    px = torch.randperm(len(x), generator=g)[:n].to(x.device)
    py = torch.randperm(len(y), generator=g)[:n].to(y.device)
    x, y = x[px], y[py]
    dirs = torch.randn(x.shape[1], projections, generator=g, dtype=torch.float64).to(x.device)
    dirs = dirs / dirs.norm(dim=0, keepdim=True)
    px, py = (x @ dirs).sort(0).values, (y @ dirs).sort(0).values
    return (px - py).pow(2).mean().sqrt().item()


def straightness(trajectory: list[torch.Tensor]) -> float:
    """Mean over samples of path length / chord: 1 for straight paths."""
    if len(trajectory) < 2 or not all(isinstance(x, torch.Tensor) for x in trajectory):
        raise ValueError("trajectory must be >= 2 tensors (B, ...): the states along the paths")
    if len({tuple(x.shape) for x in trajectory}) > 1:
        raise ValueError("trajectory states must share one shape (B, ...)")
    if not all(bool(torch.isfinite(x).all()) for x in trajectory):
        raise ValueError("trajectory holds NaN or inf")
    steps = torch.stack([b - a for a, b in itertools.pairwise(trajectory)])
    length = steps.flatten(2).norm(dim=2).sum(0)
    chord = (trajectory[-1] - trajectory[0]).flatten(1).norm(dim=1).clamp_min(1e-12)
    return (length / chord).mean().item()


def nearest_distance(x: torch.Tensor, ref: torch.Tensor) -> float:
    """Mean over x of the Euclidean distance to its nearest neighbour in ref (a memorisation
    check: samples that copy training images sit at ~0)."""
    return torch.cdist(x.flatten(1).double(), ref.flatten(1).double()).min(1).values.mean().item()


class FeatureNet(nn.Module):
    """A small MLP classifier whose penultimate layer gives the features of the Fréchet proxy."""

    def __init__(self, in_dim: int, classes: int, width: int = 128):
        super().__init__()
        self.body = nn.Sequential(
            nn.Flatten(), nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU()
        )
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(self.body(x))


def train_feature_net(
    x: torch.Tensor, y: torch.Tensor, epochs: int = 30, seed: int = 0, width: int = 128
) -> FeatureNet:
    """Train the proxy's classifier on x's device; its features have ``width`` dimensions."""
    torch.manual_seed(seed)
    net = FeatureNet(x[0].numel(), int(y.max()) + 1, width).to(x.device)
    y = y.to(x.device)
    opt = torch.optim.Adam(net.parameters(), lr=2e-3)
    for _ in range(epochs):
        for idx in torch.randperm(len(x)).to(x.device).split(128):
            loss = nn.functional.cross_entropy(net(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return net.eval()


@torch.no_grad()
def feature_mmd(net: FeatureNet, x: torch.Tensor, y: torch.Tensor) -> float:
    """The MMD of ``mmd`` on the classifier's features (a kernel distance: unbiased, so usable
    with few samples where the Fréchet distance's covariance estimate is poor)."""
    return mmd(net.body(x), net.body(y))


@torch.no_grad()
def frechet_distance(net: FeatureNet, x: torch.Tensor, y: torch.Tensor) -> float:
    """Fréchet distance between Gaussian fits of the classifier features of x and y."""
    check_samples(x, y)
    if not isinstance(net, FeatureNet):
        raise TypeError(f"net must be a FeatureNet (train_feature_net), got {type(net).__name__}")
    if net.body[1].in_features != x[0].numel():
        raise ValueError(f"net takes samples of {net.body[1].in_features} values, x has "
                         f"{x[0].numel()} per sample")  # fmt: skip
    fx, fy = net.body(x).double(), net.body(y).double()
    mx, my = fx.mean(0), fy.mean(0)
    cx, cy = torch.cov(fx.T), torch.cov(fy.T)
    ex, vx = torch.linalg.eigh(cx)
    sx = vx @ torch.diag(ex.clamp_min(0).sqrt()) @ vx.T
    cross = torch.linalg.eigvalsh(sx @ cy @ sx).clamp_min(0).sqrt().sum()
    return ((mx - my).pow(2).sum() + cx.trace() + cy.trace() - 2 * cross).item()


def prior_match(x1: torch.Tensor, scale: float = 1.0, rtol: float = 0.08, draws: int = 19) -> dict:
    """The official stopping rule of stage 1 (``runner.py``): does the terminal law look like the
    prior N(0, scale^2 I)?

    - the largest eigenvalue of x1's covariance (over scale^2) is at most that of as many true
      prior draws, here the largest over ``draws`` such draws (the official code compares with
      one draw, which a law equal to the prior passes only half the time; with 19 it passes 95%
      of the time: the rule's false alarm rate is 5%);
    - the radial statistics of ``r = ||x1||^2``: the relative errors of its mean against
      ``d scale^2`` and of its variance against ``2 d scale^4`` are both below ``rtol``.

    The prior's eigenvalues are those of standard normal draws (scale-free), computed once per
    (n, d, draws) from a fixed seed and cached. Returns the four numbers and ``passed``."""
    (flat,) = check_samples(x1, x1, ("x1", "x1"))[:1]
    if not (isinstance(scale, int | float) and scale > 0):
        raise ValueError(f"scale must be a positive number, got {scale!r}")
    if isinstance(draws, bool) or not isinstance(draws, int) or draws < 1:
        raise ValueError(f"draws must be an integer >= 1, got {draws!r}")
    n, d = flat.shape
    r = flat.pow(2).sum(1)
    out = {
        "top_eigenvalue": _top_eigenvalue(flat) / scale**2,
        "prior_top_eigenvalue": _prior_top_eigenvalue(n, d, draws),
        "radial_mean_error": abs(float(r.mean()) / (d * scale**2) - 1),
        "radial_var_error": abs(float(r.var()) / (2 * d * scale**4) - 1),
    }
    spread = out["top_eigenvalue"] <= out["prior_top_eigenvalue"]
    radial = out["radial_mean_error"] < rtol and out["radial_var_error"] < rtol
    out["passed"] = bool(spread and radial)
    return out


def _top_eigenvalue(x: torch.Tensor) -> float:
    d = x.shape[1]
    return float(torch.linalg.eigvalsh(torch.cov(x.T).reshape(d, d))[-1])


@functools.lru_cache(maxsize=32)
def _prior_top_eigenvalue(n: int, d: int, draws: int) -> float:
    """The largest top covariance eigenvalue over ``draws`` sets of n standard normal d-vectors."""
    g = torch.Generator().manual_seed(0)
    return max(_top_eigenvalue(torch.randn(n, d, generator=g)) for _ in range(draws))
