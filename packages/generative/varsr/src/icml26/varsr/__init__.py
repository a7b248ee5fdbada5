"""VAR-SR: visual autoregressive super-resolution with hierarchical tokenization (HIT) and DPO.

The public API: the multi-scale residual-quantisation tokenizer (``MultiScaleRQ``), the VAR
transformer that predicts the HR tokens scale by scale from the LR image (``VARTransformer``),
its training objectives and loop (``tokenizer_objective``, ``var_objective`` with the DPO term
``dpo_loss``, ``fit``), whole-image inference (``upscale``), saving and loading
(``save_pretrained`` / ``load_pretrained``), the ESPCN regression baseline and the image helpers.
"""

from icml26.varsr.baselines import ESPCN
from icml26.varsr.data import (
    bicubic_up,
    check_image,
    downsample,
    load_data,
    load_image,
    psnr_ssim,
    to_image,
)
from icml26.varsr.pretrained import load_pretrained, save_pretrained
from icml26.varsr.tokenizer import MultiScaleRQ, TokenizerConfig
from icml26.varsr.train import FitConfig, espcn_objective, fit, tokenizer_objective, var_objective
from icml26.varsr.upscale import upscale
from icml26.varsr.var import VARConfig, VARTransformer, dpo_loss

__all__ = [
    "ESPCN",
    "FitConfig",
    "MultiScaleRQ",
    "TokenizerConfig",
    "VARConfig",
    "VARTransformer",
    "bicubic_up",
    "check_image",
    "downsample",
    "dpo_loss",
    "espcn_objective",
    "fit",
    "load_data",
    "load_image",
    "load_pretrained",
    "psnr_ssim",
    "save_pretrained",
    "to_image",
    "tokenizer_objective",
    "upscale",
    "var_objective",
]
