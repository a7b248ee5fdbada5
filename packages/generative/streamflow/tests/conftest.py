"""Shared test models."""

import pytest
import torch

# the toolkit's pytest plugin: seeding, `device` parametrization, slow/gpu/distributed markers
pytest_plugins = ["icml26.testing.plugin"]


@pytest.fixture
def tiny_flux():
    """A factory of tiny random Flux transformers (4 latent channels, embedded guidance)."""
    from diffusers import FluxTransformer2DModel

    def make(seed: int = 0):
        torch.manual_seed(seed)
        return FluxTransformer2DModel(
            patch_size=1,
            in_channels=16,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=8,
            num_attention_heads=2,
            joint_attention_dim=16,
            pooled_projection_dim=8,
            guidance_embeds=True,
            axes_dims_rope=(2, 2, 4),
        ).eval()

    return make
