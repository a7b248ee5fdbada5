"""The composite, function-informed reward: hard gates times soft terms.

    R(x) = gate(x) * [ w_d * d(x) + w_dev * dev(x) + w_m * motif(x) ] / (w_d + w_dev + w_m)

* **gate(x)** in {0, 1}: fixed motif positions keep their residues, *required* positions hold one
  of their allowed residues (e.g. the cysteines of a disulfide), and no designed position holds a
  *forbidden* residue (e.g. a free cysteine). Any violation zeroes the reward.
* **d(x)**, the designability term, is a *proxy*: no folding model (ESMFold, AlphaFold2) has
  weights offline, so d(x) is the per-residue geometric-mean probability of x under a
  *separately trained* ProteinMPNN (the soluble weights by default, never the policy's own), i.e.
  1 / perplexity, averaged over fixed decoding orders. Plug a real score in with
  ``CompositeReward(designability=my_fn)``, where ``my_fn(seqs) -> (n,)`` values in [0, 1].
* **dev(x)**, developability: the mean of three window scores (1 inside the window, falling
  linearly to 0 one window-width outside): net charge at pH 7 (K + R - D - E), hydrophobic
  fraction (AILMFVW), and the longest run of K or E.
* **motif(x)**: the fraction of soft motif positions that hold their target residue.

A design **succeeds** when its gate passes, every developability window holds and d(x) is at
least the native sequence's d (the design is at least as plausible for the backbone as the
protein that folds into it, by the same score). Success rate and precision are read off that;
``with_designability`` swaps the score, e.g. for a held-out judge that training never sees.
FIDIA's exact reward is not public; this composite (gates times designability, developability
and motif terms) is a reconstruction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from icml26.fidia.data import ALPHABET, Backbone, encode

HYDROPHOBIC = "AILMFVW"
POSITIVE, NEGATIVE = "KR", "DE"


def _check_backbone(backbone) -> None:
    if not isinstance(backbone, Backbone):
        raise TypeError(
            f"backbone must be a Backbone (load_backbone, example_backbone), got "
            f"{type(backbone).__name__}"
        )


@dataclass(frozen=True)
class RewardOutput:
    """Rewards of n sequences and what they are made of.

    Attributes:
        reward: (n,) float64 composite reward. gate: (n,) bool. success: (n,) bool.
        terms: name -> (n,) float64 (designability, developability, motif, charge, ...).
    """

    reward: torch.Tensor
    gate: torch.Tensor
    success: torch.Tensor
    terms: dict[str, torch.Tensor] = field(default_factory=dict)


class DesignabilityProxy:
    """d(x) = exp(mean log p(x_i | ...)) under a separately trained ProteinMPNN, over fixed orders.

    A proxy for designability (what a folding model's pLDDT or self-consistency TM-score would
    measure); named so everywhere it is reported.
    """

    def __init__(self, backbone: Backbone, weights: str = "v_48_020", kind: str = "soluble",
                 orders: int = 1, seed: int = 0, device: str = "cpu"):  # fmt: skip
        from icml26.fidia.policy import MPNNPolicy

        _check_backbone(backbone)
        if orders < 1:
            raise ValueError(f"orders must be >= 1, got {orders}")
        self.backbone = backbone
        self.model = MPNNPolicy.from_package(weights, kind, trainable_layers=0).to(device)
        g = torch.Generator().manual_seed(seed)
        L = len(backbone)
        self.orders = torch.stack([torch.randperm(L, generator=g) for _ in range(orders)])
        # residues the structure does not name (X) are left out: no design emits X there
        self.unknown = tuple(torch.nonzero(backbone.native == ALPHABET.index("X"))[:, 0].tolist())
        self.name = f"proxy: ProteinMPNN {kind} {weights}"

    @torch.no_grad()
    def __call__(self, seqs: torch.Tensor) -> torch.Tensor:
        seqs = check_sequences(seqs, len(self.backbone)).to(self.model.device)
        n, L = seqs.shape
        total = torch.zeros(n, dtype=torch.float64, device=seqs.device)
        for order in self.orders:
            s = self.model.score(self.backbone, seqs, order.expand(n, L).to(seqs.device),
                                 fixed=self.unknown or None)  # fmt: skip
            total += s.log_probs.double()
        return torch.exp(total / (len(self.orders) * (L - len(self.unknown)))).cpu()


def check_sequences(seqs, length: int) -> torch.Tensor:
    """``seqs`` as an (n, ``length``) int64 CPU tensor of residue indices into ``ALPHABET``, or a
    named error: a float tensor or indices outside the alphabet are not sequences."""
    try:
        seqs = torch.as_tensor(seqs)
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:  # ragged, huge, not numbers
        msg = f"seqs must be integer residue indices (icml26.fidia.encode): {e}"
        raise TypeError(msg) from None
    if seqs.is_floating_point() or seqs.is_complex() or seqs.dtype == torch.bool:
        raise TypeError(f"seqs must be integer residue indices (icml26.fidia.encode), got "
                        f"{seqs.dtype}")  # fmt: skip
    if seqs.ndim != 2 or seqs.shape[1] != length:
        raise ValueError(f"seqs must be (n, {length}), got {tuple(seqs.shape)}")
    seqs = seqs.cpu().long()
    if seqs.numel() and (int(seqs.min()) < 0 or int(seqs.max()) >= len(ALPHABET)):
        raise ValueError(f"seqs must index the {len(ALPHABET)}-letter alphabet {ALPHABET!r}, got "
                         f"values in [{int(seqs.min())}, {int(seqs.max())}]")  # fmt: skip
    return seqs


def _window(value: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """1 inside [lo, hi], falling linearly to 0 one window-width (at least 1) outside."""
    width = max(hi - lo, 1.0)
    below = (lo - value).clamp(min=0) / width
    above = (value - hi).clamp(min=0) / width
    return (1 - below - above).clamp(min=0)


def longest_run(seqs: torch.Tensor, letters: str) -> torch.Tensor:
    """(n,) the longest run of consecutive residues drawn from ``letters``."""
    hit = torch.zeros_like(seqs, dtype=torch.bool)
    for c in letters:
        hit |= seqs == ALPHABET.index(c)
    run = torch.zeros(seqs.shape[0], dtype=torch.long)
    best = torch.zeros_like(run)
    for j in range(seqs.shape[1]):
        run = torch.where(hit[:, j].cpu(), run + 1, 0)
        best = torch.maximum(best, run)
    return best


class CompositeReward:
    """Gated composite reward for designs on one backbone (see the module docstring).

    Args:
        backbone: the target.
        fixed: 0-based positions that must keep the native residue (the hard motif).
        required: 0-based position -> allowed residues, e.g. ``{4: "C", 54: "C"}``.
        forbidden: residues no designed position may hold outside ``required`` (e.g. ``"C"``).
        motif: soft motif, 0-based position -> target residue (scored, not gated).
        designability: a callable seqs (n, L) -> (n,) in [0, 1]; default
            :class:`DesignabilityProxy` on the soluble weights.
        charge: net-charge window. hydrophobic: hydrophobic-fraction window.
        max_repeat: longest allowed run of K or E.
        weights: (w_d, w_dev, w_m).
    """

    def __init__(
        self,
        backbone: Backbone,
        *,
        fixed: Sequence[int] = (),
        required: Mapping[int, str] | None = None,
        forbidden: str = "",
        motif: Mapping[int, str] | None = None,
        designability: Callable[[torch.Tensor], torch.Tensor] | None = None,
        charge: tuple[float, float] = (-4.0, 4.0),
        hydrophobic: tuple[float, float] = (0.2, 0.45),
        max_repeat: int = 3,
        weights: tuple[float, float, float] = (1.0, 0.5, 0.0),
        device: str = "cpu",
    ):
        _check_backbone(backbone)
        L = len(backbone)
        self.backbone = backbone
        self.fixed = tuple(int(i) for i in fixed)
        self.required = {int(k): v for k, v in (required or {}).items()}
        self.motif = {int(k): v for k, v in (motif or {}).items()}
        for name, positions in (("fixed", self.fixed), ("required", self.required),
                                ("motif", self.motif)):  # fmt: skip
            bad = [i for i in positions if not 0 <= i < L]
            if bad:
                raise ValueError(f"{name} positions {bad} lie outside [0, {L}) of {backbone.name}")
        for name, letters in [("forbidden", forbidden), *[(f"required[{k}]", v) for k, v in
                                                          self.required.items()],
                              *[(f"motif[{k}]", v) for k, v in self.motif.items()]]:  # fmt: skip
            if set(letters) - set(ALPHABET[:20]):
                raise ValueError(f"{name} has letters outside the 20 amino acids: {letters!r}")
        if any(len(v) != 1 for v in self.motif.values()):
            raise ValueError("motif targets must be single residues")
        if charge[0] > charge[1] or hydrophobic[0] > hydrophobic[1]:
            raise ValueError("windows must be (low, high) with low <= high")
        if max_repeat < 1:
            raise ValueError(f"max_repeat must be >= 1, got {max_repeat}")
        if min(weights) < 0 or sum(weights) <= 0:
            raise ValueError(f"weights must be >= 0 and not all 0, got {weights}")
        self.forbidden = forbidden
        self.charge, self.hydrophobic, self.max_repeat = charge, hydrophobic, max_repeat
        self.weights = weights
        self.designability = designability or DesignabilityProxy(backbone, device=device)
        self.native_designability = float(self.designability(backbone.native[None])[0])

    def with_designability(self, designability) -> CompositeReward:
        """The same gates, windows and weights with another designability score (e.g. a
        held-out judge that training never sees)."""
        return CompositeReward(
            self.backbone, fixed=self.fixed, required=self.required, forbidden=self.forbidden,
            motif=self.motif, designability=designability, charge=self.charge,
            hydrophobic=self.hydrophobic, max_repeat=self.max_repeat, weights=self.weights,
        )  # fmt: skip

    def gate(self, seqs: torch.Tensor) -> torch.Tensor:
        """(n,) True where every hard constraint holds."""
        native = self.backbone.native
        ok = torch.ones(seqs.shape[0], dtype=torch.bool)
        if self.fixed:
            idx = list(self.fixed)
            ok &= (seqs[:, idx] == native[idx]).all(1)
        for pos, allowed in self.required.items():
            ok &= torch.isin(seqs[:, pos], encode(allowed))
        if self.forbidden:
            free = [i for i in range(seqs.shape[1]) if i not in self.required and
                    i not in self.fixed]  # fmt: skip
            ok &= ~torch.isin(seqs[:, free], encode(self.forbidden)).any(1)
        return ok

    def developability(self, seqs: torch.Tensor) -> dict[str, torch.Tensor]:
        def count(letters):
            return torch.isin(seqs, encode(letters)).double().sum(1)

        charge = count(POSITIVE) - count(NEGATIVE)
        hydro = count(HYDROPHOBIC) / seqs.shape[1]
        repeat = longest_run(seqs, "KE").double()
        terms = {
            "charge": charge,
            "hydrophobic_fraction": hydro,
            "ke_run": repeat,
            "charge_ok": _window(charge, *self.charge),
            "hydrophobic_ok": _window(hydro, *self.hydrophobic),
            "repeat_ok": _window(repeat, 0, self.max_repeat),
        }
        terms["developability"] = (terms["charge_ok"] + terms["hydrophobic_ok"] +
                                   terms["repeat_ok"]) / 3  # fmt: skip
        terms["windows_hold"] = ((charge >= self.charge[0]) & (charge <= self.charge[1]) &
                                 (hydro >= self.hydrophobic[0]) & (hydro <= self.hydrophobic[1]) &
                                 (repeat <= self.max_repeat)).double()  # fmt: skip
        return terms

    def __call__(self, seqs: torch.Tensor) -> RewardOutput:
        """Score (n, L) sequences (int64 indices)."""
        seqs = check_sequences(seqs, len(self.backbone))
        gate = self.gate(seqs)
        d = torch.as_tensor(self.designability(seqs), dtype=torch.float64).cpu()
        if d.shape != (seqs.shape[0],) or not torch.isfinite(d).all():
            raise ValueError("designability must return (n,) finite values")
        terms = self.developability(seqs)
        if self.motif:
            pos = list(self.motif)
            target = encode("".join(self.motif.values()))
            motif = (seqs[:, pos] == target).double().mean(1)
        else:
            motif = torch.ones(seqs.shape[0], dtype=torch.float64)
        w_d, w_dev, w_m = self.weights
        soft = (w_d * d + w_dev * terms["developability"] + w_m * motif) / sum(self.weights)
        reward = gate.double() * soft
        success = gate & (terms["windows_hold"] > 0) & (d >= self.native_designability)
        terms.update(designability=d, motif=motif)
        return RewardOutput(reward, gate, success, terms)
