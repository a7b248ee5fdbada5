"""The two-headed convolutional network: a policy pi(. | n) and a cost-to-go h(n) from one trunk.

Architecture (ours, small enough for 2 CPU cores; the authors' ``twoheaded_convnet`` is a ResNet of
the same shape of idea): 3x3 conv blocks on the (C, H, W) observation, then a policy head (logits
over the A actions) and a heuristic head (a scalar, the predicted number of moves to the goal).
Weights are stored as safetensors plus a JSON config.
"""

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from icml26.testing.files import atomic_write, atomic_write_text


@dataclass(frozen=True)
class ConvNetConfig:
    """Shape of the two-headed network."""

    in_channels: int = 4
    """Observation channels (4 for Sokoban: walls, goals, boxes, player)."""
    height: int = 10
    """Observation height."""
    width: int = 10
    """Observation width."""
    num_actions: int = 4
    """Policy head size A."""
    channels: int = 16
    """Convolution width."""
    blocks: int = 1
    """Residual 3x3 conv blocks after the stem."""
    hidden: int = 64
    """Width of each head's hidden layer."""


class _Block(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.conv2(torch.relu(self.conv1(x))))


class TwoHeadedConvNet(nn.Module):
    """``net(obs) -> (logits (B, A), h (B,))`` for observations of shape (B, C, H, W)."""

    def __init__(self, config: ConvNetConfig | None = None) -> None:
        super().__init__()
        cfg = config or ConvNetConfig()
        if min(cfg.in_channels, cfg.height, cfg.width, cfg.num_actions, cfg.channels) < 1:
            raise ValueError(f"every size in the config must be >= 1, got {cfg}")
        self.config = cfg
        self.stem = nn.Sequential(nn.Conv2d(cfg.in_channels, cfg.channels, 3, padding=1), nn.ReLU())
        self.trunk = nn.Sequential(*[_Block(cfg.channels) for _ in range(cfg.blocks)])
        flat = cfg.channels * cfg.height * cfg.width
        self.policy_head = nn.Sequential(
            nn.Flatten(),
            nn.Linear(flat, cfg.hidden),
            nn.ReLU(),
            nn.Linear(cfg.hidden, cfg.num_actions),
        )
        self.heuristic_head = nn.Sequential(
            nn.Flatten(), nn.Linear(flat, cfg.hidden), nn.ReLU(), nn.Linear(cfg.hidden, 1)
        )

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """obs (B, C, H, W) -> policy logits (B, A), heuristic h (B,)."""
        expected = (self.config.in_channels, self.config.height, self.config.width)
        if obs.ndim != 4 or tuple(obs.shape[1:]) != expected:
            raise ValueError(
                f"obs must have shape (B, {', '.join(map(str, expected))}), got {tuple(obs.shape)}"
            )
        z = self.trunk(self.stem(obs))  # (B, channels, H, W)
        return self.policy_head(z), self.heuristic_head(z).squeeze(-1)

    def save_pretrained(self, directory: str | os.PathLike) -> None:
        """Write ``model.safetensors`` and ``config.json`` into ``directory`` (atomically)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        tensors = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        atomic_save_tensors(tensors, directory / "model.safetensors")
        atomic_write_text(directory / "config.json", json.dumps(asdict(self.config), indent=2))

    @classmethod
    def from_pretrained(cls, directory: str | os.PathLike) -> "TwoHeadedConvNet":
        """Load what ``save_pretrained`` wrote (safetensors only, nothing unpickled)."""
        directory = Path(directory)
        cfg_path, w_path = directory / "config.json", directory / "model.safetensors"
        if not cfg_path.is_file() or not w_path.is_file():
            raise ValueError(
                f"{str(directory)!r} has no config.json + model.safetensors checkpoint"
            )
        try:
            cfg = ConvNetConfig(**json.loads(cfg_path.read_text()))
        except (json.JSONDecodeError, TypeError) as e:
            raise ValueError(f"{cfg_path}: not a ConvNetConfig ({type(e).__name__}: {e})") from None
        net = cls(cfg)
        net.load_state_dict(load_file(w_path))
        return net


def atomic_save_tensors(tensors: dict[str, torch.Tensor], path: Path) -> None:
    """safetensors ``save_file`` through a temp file and a rename."""
    atomic_write(path, lambda tmp: save_file(tensors, tmp))
