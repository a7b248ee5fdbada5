"""A small flow-matching model trained here on offline 8x8 digits, and random diffusers UNets of
several sizes for throughput (speed does not depend on the weights)."""

import torch
from diffusers import UNet2DModel
from tqdm.auto import tqdm

from icml26.testing.checks import number

SIZES = {
    "tiny": dict(block_out_channels=(32, 64), layers_per_block=1),
    "small": dict(block_out_channels=(64, 128), layers_per_block=2),
    "base": dict(block_out_channels=(128, 256), layers_per_block=2),
}


def unet(
    size: str = "tiny",
    sample_size: int = 8,
    channels: int = 1,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> UNet2DModel:
    """A diffusers UNet2DModel for (channels, sample_size, sample_size) latents, on ``device``
    (initialised on the CPU, so a seed gives the same weights everywhere)."""
    if size not in SIZES:
        raise ValueError(f"size must be one of {sorted(SIZES)}, got {size!r}")
    for name, v in (("sample_size", sample_size), ("channels", channels)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    levels = len(SIZES[size]["block_out_channels"])
    if sample_size % 2 ** (levels - 1):
        raise ValueError(f"sample_size must be a multiple of {2 ** (levels - 1)} for the "
                         f"{size!r} UNet ({levels} levels), got {sample_size}")  # fmt: skip
    torch.manual_seed(seed)
    return (
        UNet2DModel(
            sample_size=sample_size,
            in_channels=channels,
            out_channels=channels,
            down_block_types=("DownBlock2D", "DownBlock2D"),
            up_block_types=("UpBlock2D", "UpBlock2D"),
            norm_num_groups=8,
            **SIZES[size],
        )
        .to(device)
        .eval()
    )


def digits_images(device: str | torch.device = "cpu") -> torch.Tensor:
    """scikit-learn's 1797 8x8 digits as (N, 1, 8, 8) in [-1, 1], on ``device``."""
    from sklearn.datasets import load_digits

    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must name a torch device (cpu, cuda:1), got {device!r}") from e
    x = torch.tensor(load_digits().data, dtype=torch.float32).view(-1, 1, 8, 8) / 8.0 - 1.0
    return x.to(device)


def train_flow_matching(
    model: UNet2DModel,
    data: torch.Tensor,
    steps: int = 1500,
    batch_size: int = 128,
    lr: float = 2e-3,
    seed: int = 0,
    progress: bool = True,
) -> list[float]:
    """Rectified-flow training in diffusers' convention: ``x_s = (1 - s) x0 + s noise``, target
    ``noise - x0``, time input ``1000 s``.

    Runs on the model's device (batches are moved there). Indices, noise and times come from a
    seeded CPU generator, so a seed draws the same batches on every device.
    """
    for name, value in (("steps", steps), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    number("lr", lr, above=0)
    ok = isinstance(data, torch.Tensor) and data.is_floating_point() and data.ndim == 4
    if not ok or len(data) == 0:
        raise ValueError(f"data must be a non-empty float tensor of images (N, C, H, W), got "
                         f"{getattr(data, 'dtype', type(data).__name__)} "
                         f"{tuple(getattr(data, 'shape', ()))}")  # fmt: skip
    if not bool(torch.isfinite(data).all()):
        raise ValueError("data holds NaN or inf")
    device = next(model.parameters()).device
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    losses = []
    for _ in tqdm(range(steps), desc="flow matching", disable=not progress):
        idx = torch.randint(0, len(data), (batch_size,), generator=g)
        x0 = data[idx.to(data.device)].to(device)
        noise = torch.randn(x0.shape, generator=g).to(device)
        s = torch.rand(batch_size, generator=g).to(device)
        xs = (1 - s.view(-1, 1, 1, 1)) * x0 + s.view(-1, 1, 1, 1) * noise
        v = model(xs, 1000 * s, return_dict=False)[0]
        loss = (v - (noise - x0)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    model.eval()
    return losses


def text_to_image(
    sample_size: int = 8, text_len: int = 8, seed: int = 0, device: str | torch.device = "cpu"
) -> tuple:
    """A random text-to-image pipeline in miniature, for timing what a real-time loop runs: a
    diffusers ``UNet2DConditionModel`` on (4, sample_size, sample_size) latents with cross
    attention to a (text_len, 32) prompt embedding (classifier-free guidance doubles its batch),
    and an ``AutoencoderTiny`` (TAESD's blocks, narrower and shallower) that decodes every
    finished latent to 4x its size in RGB. On one CPU thread its decode costs about a quarter
    of a guided model call per image (TAESD beside Stable Diffusion 1.5's UNet weighs less, so
    decoding takes a larger share here than in the paper's setting).
    Returns (unet, vae, condition, uncond)."""
    from diffusers import AutoencoderTiny, UNet2DConditionModel

    torch.manual_seed(seed)
    unet_ = UNet2DConditionModel(
        sample_size=sample_size,
        in_channels=4,
        out_channels=4,
        block_out_channels=(32, 64),
        layers_per_block=1,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32,
        attention_head_dim=4,
        norm_num_groups=8,
    )
    vae = AutoencoderTiny(
        encoder_block_out_channels=(16, 16, 16),
        decoder_block_out_channels=(16, 16, 16),
        num_encoder_blocks=(1, 1, 1),
        num_decoder_blocks=(1, 1, 1),
        latent_channels=4,
    )
    g = torch.Generator().manual_seed(seed + 1)
    cond, uncond = torch.randn(2, text_len, 32, generator=g)
    return (
        unet_.to(device).eval(),
        vae.to(device).eval(),
        cond.to(device),
        uncond.to(device),
    )
