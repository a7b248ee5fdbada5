"""EntQuant's scale search: entropy-regularised, data-free, one weight matrix at a time.

Paper: "Float8@2bits: Entropy Coding Meets Quantization" (EntQuant, arXiv 2601.22787). Per output
channel i one scale s_i = 2^(l_i), parameterised by its log2 l_i and initialised at absmax:

    Q    = cast(clamp(W / s, -q_max, q_max))            codes (FP8-E4M3 or INT8 grid)
    W^   = Q * s                                        dequantised weights
    loss = ||W^ - W||_1 / ||W||_1 + lambda * reg(Q)     reg = 4 mean|Q| (FP8), mean|Q|/128 (INT8)

minimised over l alone by L-BFGS (strong-Wolfe line search, up to ~500 iterations; a NaN loss
restarts with half the learning rate), with straight-through gradients through round, clamp and
cast. ``reg`` is an L1 proxy for the entropy of the codes: a larger lambda pushes the codes towards
zero, where FP8's grid is fine and the histogram peaked, so they cost fewer bits once entropy
coded. Reported: lambda = 3.9, 14.5, 58 give about 4, 3, 2 bits per parameter.

The ICML paper text was not available to us; the objective, the regulariser constants, the log2
parameterisation and the optimiser settings are taken from public descriptions of the method and
cross-read against a public implementation of it. Our one addition: a code of -0 (FP8 0x80) is
stored as +0, so the two zeros do not split the most frequent symbol (the weights are unchanged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

QType = Literal["fp8_e4m3", "int8"]
QTYPES: dict[str, float] = {"fp8_e4m3": 448.0, "int8": 127.0}
"""Largest code magnitude per grid: FP8-E4M3 (no inf) tops out at 448; INT8 is kept symmetric."""


class _RoundSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, g):
        return g


class _ClampSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, bound: float):
        return x.clamp(-bound, bound)

    @staticmethod
    def backward(ctx, g):
        return g, None


class _CastFP8STE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.to(torch.float8_e4m3fn).to(x.dtype)

    @staticmethod
    def backward(ctx, g):
        return g


def fake_quantize(w: torch.Tensor, log_scale: torch.Tensor, qtype: QType) -> torch.Tensor:
    """Codes Q as floats on the grid, differentiable in ``log_scale`` (straight-through).

    w (O, I), log_scale (O,) -> (O, I)."""
    # ldexp by -l instead of dividing by 2^l: the gradient w.r.t. l stays well scaled.
    x = w * torch.exp2(-log_scale)[:, None]
    if qtype == "int8":
        x = _RoundSTE.apply(x)
    x = _ClampSTE.apply(x, QTYPES[qtype])
    if qtype == "fp8_e4m3":
        x = _CastFP8STE.apply(x)
    return x


def regulariser(q: torch.Tensor, qtype: QType) -> torch.Tensor:
    """The entropy proxy reg(Q): 4 mean|Q| on the FP8 grid, mean|Q| / 128 on the INT8 grid."""
    return q.abs().mean() * 4.0 if qtype == "fp8_e4m3" else q.abs().mean() / 128.0


def absmax_log_scales(w: torch.Tensor, qtype: QType) -> torch.Tensor:
    """log2 of the absmax scales (the largest |w| of each row lands on the grid's maximum). (O,)

    An all-zero row (a pruned output) gets scale 1: its codes are 0 at any scale, and the
    absmax scale of 0 would overflow ``2^-log_scale`` to inf and make 0 * inf = NaN. Rows whose
    absmax is below 1e-30 are scaled as if it were 1e-30, for the same reason."""
    absmax = w.abs().amax(dim=1)
    absmax = torch.where(
        absmax > 0, absmax.clamp_min(1e-30), torch.full_like(absmax, QTYPES[qtype])
    )
    return torch.log2(absmax / QTYPES[qtype])


@dataclass(frozen=True)
class QuantizedWeight:
    """One quantised matrix: ``codes`` (O, I) uint8 symbols, ``scales`` (O,) float32.

    FP8 codes are the E4M3 bit patterns; INT8 codes are ``q + 128``. ``dequantize()`` gives
    ``Q * s`` exactly as the optimiser saw it.
    """

    codes: torch.Tensor
    scales: torch.Tensor
    qtype: QType
    iterations: int = 0
    loss: float = float("nan")

    def values(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The codes as numbers on their grid, in ``dtype`` (O, I): exact in float32, bfloat16
        and float16 (FP8 E4M3 and int8 values fit all three)."""
        if self.qtype == "fp8_e4m3":
            return self.codes.view(torch.float8_e4m3fn).to(dtype)
        return self.codes.to(dtype) - 128.0

    def dequantize(self) -> torch.Tensor:
        """W^ = Q * s, float32 (O, I)."""
        return self.values() * self.scales[:, None]


def encode_codes(q: torch.Tensor, qtype: QType) -> torch.Tensor:
    """Grid values (from ``fake_quantize``, float) -> uint8 symbols; -0 becomes +0."""
    if qtype == "fp8_e4m3":
        q = torch.where(q == 0, torch.zeros_like(q), q)  # one symbol for zero, not two
        return q.to(torch.float8_e4m3fn).view(torch.uint8)
    return (q.round().to(torch.int16) + 128).to(torch.uint8)


def check_weight(w: torch.Tensor, name: str = "W") -> torch.Tensor:
    """A finite, non-empty 2-D floating matrix, returned as float32 on its device."""
    if not isinstance(w, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(w).__name__}")
    if w.dim() != 2 or w.numel() == 0:
        raise ValueError(
            f"{name} must be a non-empty 2-D (out, in) matrix, got shape {tuple(w.shape)}"
        )
    if not w.is_floating_point():
        raise TypeError(f"{name} must be floating point, got {w.dtype}")
    w = w.detach().float()
    if not torch.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or inf")
    return w


def default_lr(lam: float) -> float:
    """L-BFGS learning rate for ``lam``, as the authors' presets set it: 1.0 for their 4- and
    3-bit settings (lambda 3.9, 14.5) and 0.25 for the 2-bit one (lambda 58); between presets,
    the rate of the preset below."""
    return 0.25 if lam >= 58.0 else 1.0


def quantize_linear(
    w: torch.Tensor,
    lam: float,
    qtype: QType = "fp8_e4m3",
    max_iter: int = 500,
    lr: float | None = None,
    max_retries: int = 4,
) -> QuantizedWeight:
    """EntQuant on one weight matrix ``w`` (out, in): optimise the per-row scales, return the codes.

    ``lam`` is the paper's lambda (0 keeps the absmax scales, the plain 8-bit baseline). The codes
    are the grid values of the final scales, so dequantising them reproduces what was optimised.
    ``lr``: L-BFGS's learning rate, by default ``default_lr(lam)``.
    """
    w = check_weight(w)
    if qtype not in QTYPES:
        raise ValueError(f"qtype must be one of {sorted(QTYPES)}, got {qtype!r}")
    if isinstance(lam, bool) or not (
        isinstance(lam, int | float) and math.isfinite(lam) and lam >= 0
    ):
        raise ValueError(f"lam must be a finite number >= 0, got {lam!r}")
    if max_iter < 0:
        raise ValueError(f"max_iter must be >= 0, got {max_iter}")
    lr = default_lr(lam) if lr is None else lr
    if not lr > 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    log_scale0 = absmax_log_scales(w, qtype)
    w_l1 = w.abs().sum().clamp_min(torch.finfo(torch.float32).tiny)

    def objective(log_scale):
        q = fake_quantize(w, log_scale, qtype)
        w_hat = q * torch.exp2(log_scale)[:, None]
        return (w_hat - w).abs().sum() / w_l1 + lam * regulariser(q, qtype)  # the loss above

    log_scale, iterations = log_scale0, 0
    if lam > 0 and max_iter > 0:
        for _ in range(max_retries + 1):
            param = log_scale0.clone().requires_grad_(True)
            opt = torch.optim.LBFGS(
                [param], lr=lr, max_iter=max_iter, history_size=100, line_search_fn="strong_wolfe"
            )

            def closure(param=param, opt=opt):
                opt.zero_grad()
                loss = objective(param)
                loss.backward()
                return loss

            opt.step(closure)
            state = opt.state[opt._params[0]]
            with torch.no_grad():
                if torch.isfinite(param).all() and torch.isfinite(objective(param)):
                    log_scale, iterations = param.detach(), int(state.get("n_iter", 0))
                    break
            lr *= 0.5  # the paper's retry rule: NaN -> half the learning rate
        else:
            raise RuntimeError(f"L-BFGS gave a non-finite loss {max_retries + 1} times")
    with torch.no_grad():
        q = fake_quantize(w, log_scale, qtype)
        loss = float(objective(log_scale))
    return QuantizedWeight(
        codes=encode_codes(q, qtype),
        scales=torch.exp2(log_scale).float(),
        qtype=qtype,
        iterations=iterations,
        loss=loss,
    )
