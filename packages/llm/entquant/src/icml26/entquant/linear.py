"""``EntQuantLinear``: a linear layer that stores its weight EntQuant-coded (rANS codes, the
frequency table and per-row scales) and decodes it for the matmul.

``decode="lazy"`` decodes the codes into a temporary weight just before each matmul (the
paper's decode-on-the-fly; memory holds one dense matrix at a time); ``"cached"`` decodes once,
at the first call, and keeps the dense weight. ``set_decode_cache`` bounds what a whole model
keeps decoded.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from icml26.entquant import coding
from icml26.entquant.quantize import QTYPES, QType, QuantizedWeight, quantize_linear


class DecodeCache:
    """Dense weights decoded by ``EntQuantLinear`` layers, kept up to ``max_bytes`` in all: one
    cache shared by a model's layers bounds the memory the decoded copies take (0 keeps
    nothing; ``set_decode_cache`` attaches one).

    A forward pass visits the layers in the same order every time, a cyclic scan under which
    least-recently-used eviction misses on every access once the budget is below the total.
    So nothing is evicted: layers are kept in the order they are first decoded until the budget
    is full, and the rest are decoded on every forward (hit rate = budget / dense size)."""

    def __init__(self, max_bytes: int):
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = int(max_bytes)
        self._items: dict[int, torch.Tensor] = {}
        self.nbytes = 0
        self.hits = self.misses = 0

    def get(self, key: int) -> torch.Tensor | None:
        w = self._items.get(key)
        if w is None:
            self.misses += 1
        else:
            self.hits += 1
        return w

    def put(self, key: int, w: torch.Tensor) -> None:
        old = self._items.pop(key, None)  # the same layer in another dtype: replaced
        if old is not None:
            self.nbytes -= old.numel() * old.element_size()
        size = w.numel() * w.element_size()
        if self.nbytes + size <= self.max_bytes:
            self._items[key] = w
            self.nbytes += size

    def drop(self, key) -> None:
        old = self._items.pop(key, None)
        if old is not None:
            self.nbytes -= old.numel() * old.element_size()

    def clear(self) -> None:
        self._items.clear()
        self.nbytes = 0


def check_scales(scales: torch.Tensor, dtype: torch.dtype) -> None:
    """Scales must be finite, positive and normal in ``dtype`` (float16 has a narrow range: a
    subnormal scale keeps only a few bits)."""
    if dtype not in (torch.float32, torch.float16):
        raise ValueError(f"scale_dtype must be torch.float32 or float16, got {dtype}")
    s = scales.detach().float().cpu()
    cast = s.to(dtype).float()
    if not bool(torch.isfinite(cast).all()) or bool((cast < torch.finfo(dtype).tiny).any()):
        raise ValueError(
            f"a scale is not a finite, positive, normal {dtype} number "
            f"(range {float(s.min()):.3g} .. {float(s.max()):.3g}): keep scale_dtype=float32"
        )


class EntQuantLinear(nn.Module):
    """A linear layer stored as rANS-coded FP8/INT8 codes with one scale per output row.

    In memory: the rANS words as 16-bit integers (``words``, int16 holding the uint16 bit
    patterns), the lane offsets as int32, the 256-entry frequency table as int16 and the scales
    in ``scale_dtype`` (float32, or float16 for 16 bits per row). forward: x (..., in_features)
    -> (..., out_features), ``x @ (Q * s)^T + b`` computed in x's dtype; the dense weight is
    built in x's dtype (no float32 copy for a bf16 model).
    """

    def __init__(
        self,
        encoded: coding.EncodedCodes,
        scales: torch.Tensor,
        qtype: QType,
        bias: torch.Tensor | None = None,
        decode: Literal["lazy", "cached"] = "lazy",
        scale_dtype: torch.dtype = torch.float32,
    ):
        super().__init__()
        if qtype not in QTYPES:
            raise ValueError(f"qtype must be one of {sorted(QTYPES)}, got {qtype!r}")
        if decode not in ("lazy", "cached"):
            raise ValueError(f"decode must be 'lazy' or 'cached', got {decode!r}")
        if scale_dtype not in (torch.float32, torch.float16):
            raise ValueError(f"scale_dtype must be torch.float32 or float16, got {scale_dtype}")
        if len(encoded.shape) != 2 or scales.shape != (encoded.shape[0],):
            raise ValueError(
                f"scales must have shape (out,) = ({encoded.shape[0]},), got {tuple(scales.shape)}"
            )
        if scales.device.type != "meta":
            check_scales(scales, scale_dtype)
        self.out_features, self.in_features = encoded.shape
        self.qtype: QType = qtype
        self.decode_mode = decode
        self.register_buffer("words", coding.words_to_int16(encoded.words))
        self.register_buffer("lane_starts", encoded.starts.to(torch.int32))
        self.register_buffer("freqs", encoded.freqs.to(torch.int16))
        self.register_buffer("scales", scales.to(scale_dtype))
        self.bias = (
            nn.Parameter(bias.detach().clone(), requires_grad=False) if bias is not None else None
        )
        # the table's precision, a Python int once the table is checked, so a decode on a GPU
        # reads nothing back (None: the decoder sums the table, one host sync per decode)
        self._prob_bits: int | None = None
        if encoded.freqs.device.type != "meta":
            self._prob_bits = _table_bits(encoded.freqs)
        self._dense: torch.Tensor | None = None
        self.cache: DecodeCache | None = None
        self._cache_key = object()  # deep copies get their own key (id() could be reused)

    def _apply(self, fn, recurse=True):
        # .to(dtype) / .half() on the model must not round the scales (they stay in their
        # stored dtype; only their device follows), and decoded copies are dropped: they
        # would stay on the old device or dtype.
        scales = self.scales
        self._dense = None
        if self.cache is not None:
            self.cache.drop(self._cache_key)
        out = super()._apply(fn, recurse)
        self.scales = scales.to(fn(scales).device)
        return out

    def check(self) -> None:
        """Validate the coded tensors (once, on the host): lane offsets within the words and at
        least two words a lane, a frequency table of 2^k, finite positive scales. A loader calls
        it so a corrupted file fails here, not inside a GPU decoder."""
        starts = self.lane_starts.cpu().to(torch.int64)
        freqs = self.freqs.cpu().to(torch.int64)
        total = int(freqs.sum())
        if (
            starts.numel() < 2
            or int(starts[0]) != 0
            or int(starts[-1]) != self.words.numel()
            or bool((starts.diff() < 2).any())
        ):
            raise ValueError(f"{self!r}: lane offsets do not fit the words")
        if freqs.numel() != coding.ALPHABET or bool((freqs < 0).any()) or total & (total - 1):
            raise ValueError(f"{self!r}: the frequency table is not 256 counts summing to 2^k")
        check_scales(self.scales, self.scales.dtype)
        self._prob_bits = _table_bits(freqs)

    def _load_from_state_dict(self, state_dict, prefix, *args, **kwargs):
        # a loaded table may have another precision: forget the checked one until check()
        self._prob_bits = None
        self._dense = None
        if self.cache is not None:
            self.cache.drop(self._cache_key)
        super()._load_from_state_dict(state_dict, prefix, *args, **kwargs)

    @classmethod
    def placeholder(
        cls,
        in_features: int,
        out_features: int,
        shapes: dict,
        qtype: QType,
        bias: bool,
        decode: Literal["lazy", "cached"] = "lazy",
    ) -> EntQuantLinear:
        """An uninitialised layer with buffers of the given shapes (``{"words": (W,),
        "lane_starts": (L + 1,), "freqs": (256,), "scales": (out,), "scales_dtype": "F32" |
        "F16"}``), to be filled by a checkpoint loader (under ``torch.device("meta")`` it holds
        no memory)."""
        dtypes = {"F32": torch.float32, "F16": torch.float16}
        scale_dtype = dtypes.get(shapes.get("scales_dtype", "F32"))
        if scale_dtype is None:
            raise ValueError(f"scales must be F32 or F16, got {shapes['scales_dtype']}")
        enc = coding.EncodedCodes(
            torch.empty(shapes["words"], dtype=torch.int16),
            torch.empty(shapes["lane_starts"], dtype=torch.int32),
            torch.empty(shapes["freqs"], dtype=torch.int16),
            (out_features, in_features),
        )
        scales = torch.empty(shapes["scales"], dtype=scale_dtype)
        b = torch.empty(out_features) if bias else None
        return cls(enc, scales, qtype, b, decode, scale_dtype)

    @property
    def encoded(self) -> coding.EncodedCodes:
        """The coded codes in the decoders' dtypes (int32 words, int64 offsets and table)."""
        return coding.EncodedCodes(
            coding.words_to_int32(self.words),
            self.lane_starts.to(torch.int64),
            self.freqs.to(torch.int64),
            (self.out_features, self.in_features),
            self._prob_bits,
        )

    def quantized(self) -> QuantizedWeight:
        """Decode the codes (rANS, on the buffers' device): the ``QuantizedWeight``."""
        return QuantizedWeight(coding.decode(self.encoded), self.scales.float(), self.qtype)

    def dense(self, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """The dequantised weight Q * s in ``dtype`` (out, in): the cached copy when there is
        one, else decoded now (and kept, with ``decode="cached"`` or in a shared cache)."""
        if self._dense is not None:
            return self._dense.to(dtype)
        key = self._cache_key
        if self.cache is not None and (w := self.cache.get(key)) is not None and w.dtype == dtype:
            return w
        q = self.quantized()
        w = q.values(dtype) * q.scales.to(dtype)[:, None]
        if self.decode_mode == "cached":
            self._dense = w
        elif self.cache is not None:
            self.cache.put(key, w)
        return w

    @property
    def weight(self) -> torch.Tensor:
        """The dequantised weight Q * s, float32 (out, in)."""
        return self.dense(torch.float32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.dense(x.dtype)
        return F.linear(x, w, None if self.bias is None else self.bias.to(x.dtype))

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"qtype={self.qtype}, decode={self.decode_mode}, bias={self.bias is not None}"
        )

    @classmethod
    def from_linear(
        cls,
        linear: nn.Linear,
        lam: float,
        qtype: QType = "fp8_e4m3",
        decode: Literal["lazy", "cached"] = "lazy",
        max_iter: int = 500,
    ) -> EntQuantLinear:
        """Quantise ``linear.weight`` with EntQuant at ``lam`` and entropy-code the codes."""
        qw = quantize_linear(linear.weight, lam, qtype, max_iter=max_iter)
        return cls(coding.encode(qw.codes), qw.scales, qtype, linear.bias, decode)


def _table_bits(freqs: torch.Tensor) -> int | None:
    """log2 of the table's total when it is a power of two in [2, 2^16], else None (the
    decoder then reports the bad table)."""
    total = int(freqs.to(torch.int64).sum())
    bits = total.bit_length() - 1
    return bits if total == 1 << bits and 1 <= bits <= 16 else None


def set_decode_cache(model: nn.Module, max_bytes: int) -> DecodeCache:
    """Share one ``DecodeCache`` of ``max_bytes`` among the model's lazy ``EntQuantLinear``
    layers: decoded weights are reused across forwards while they fit (a budget as large as the
    dense layers makes decoding a one-off; 0 decodes on every forward)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int):
        raise TypeError(f"max_bytes must be an int (bytes), got {max_bytes!r}")
    cache = DecodeCache(max_bytes)
    for m in model.modules():
        if isinstance(m, EntQuantLinear):
            m.cache = cache
    return cache
