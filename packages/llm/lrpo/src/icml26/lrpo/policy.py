"""The policy: a small character-level GPT (nanoGPT's architecture) with a KV-cached sampler.

Pre-LayerNorm decoder blocks, learned positions, tied input/output embeddings. ``sample`` draws
completions for a batch of prompts at once (left-padded, attention-masked, KV cache), stopping at
the end-of-answer character; ``logprobs`` scores completions for the policy gradient.
Weights are safetensors plus a JSON config (``save_pretrained`` / ``from_pretrained``).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

from icml26.lrpo.data import ANSWER_PREFIX, EOS, LANGUAGES, MAX_VALUE, QUESTIONS, number_words, tag

PAD = "\x00"


def default_alphabet() -> str:
    """Every character the task can produce (questions, tags, answers), plus padding and EOS."""
    chars = set("0123456789*.?:=<>' " + EOS)
    for topic in QUESTIONS.values():
        for t in topic.values():
            chars |= set(t.replace("{a}", "").replace("{b}", "").replace("{s}", ""))
    for lang in LANGUAGES:
        chars |= set(ANSWER_PREFIX[lang]) | set(tag(lang))
        for v in range(MAX_VALUE + 1):
            chars |= set(number_words(v, lang))
    return PAD + "".join(sorted(chars - {PAD}))


@dataclass(frozen=True)
class GPTConfig:
    """Size of the character GPT."""

    alphabet: str = ""
    """The characters (index = token id; index 0 is padding). Empty: :func:`default_alphabet`."""
    block_size: int = 96
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 144

    @property
    def vocab(self) -> str:
        return self.alphabet or default_alphabet()

    def check(self) -> None:
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        for name in ("block_size", "n_layer", "n_head"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.n_head = cfg.n_head
        self.ln1, self.ln2 = nn.LayerNorm(cfg.n_embd), nn.LayerNorm(cfg.n_embd)
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(),
                                 nn.Linear(4 * cfg.n_embd, cfg.n_embd))  # fmt: skip

    def forward(self, x, mask, cache=None):
        """x: (B, T, C); mask: (B, 1, T, S) bool, True = attend; cache: (k, v) of (B, H, S-T, D)."""
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)  # (B, H, S, D)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x)), (k, v)


class CharGPT(nn.Module):
    """Character-level GPT: ``forward(idx, attention)`` -> logits (B, T, vocab)."""

    def __init__(self, cfg: GPTConfig | None = None):
        super().__init__()
        self.cfg = cfg = cfg or GPTConfig()
        cfg.check()
        self.vocab = cfg.vocab
        self.stoi = {c: i for i, c in enumerate(self.vocab)}
        self.tok = nn.Embedding(len(self.vocab), cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    @property
    def device(self) -> torch.device:
        return self.tok.weight.device

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # -- text <-> ids --------------------------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        try:
            return [self.stoi[c] for c in text]
        except KeyError as e:
            raise ValueError(
                f"character {e.args[0]!r} of {text!r} is not in the alphabet"
            ) from None

    def decode(self, ids) -> str:
        return "".join(self.vocab[i] for i in ids if i != 0)

    def batch(self, texts: list[str], left: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
        """Pad a batch of texts (left for prompts, right for training): ids (B, T), valid (B, T)."""
        if not texts:
            raise ValueError("texts is empty")
        enc = [self.encode(t) for t in texts]
        T = max(len(e) for e in enc)
        if self.cfg.block_size < T:
            raise ValueError(f"a text is {T} characters, over block_size {self.cfg.block_size}")
        ids = torch.zeros(len(enc), T, dtype=torch.long)
        for i, e in enumerate(enc):
            if left:
                ids[i, T - len(e) :] = torch.tensor(e)
            else:
                ids[i, : len(e)] = torch.tensor(e)
        return ids.to(self.device), (ids != 0).to(self.device)

    # -- model ---------------------------------------------------------------------------------
    def forward(self, idx: torch.Tensor, valid: torch.Tensor | None = None, cache=None, start=None):
        """idx: (B, T) token ids; valid: (B, S) keys that may be attended (S = cached + T);
        start: (B,) index of each row's first real token (left padding). Returns logits (B, T, V)
        and the new cache."""
        B, T = idx.shape
        past = 0 if cache is None else cache[0][0].shape[2]
        S = past + T
        if valid is None:
            valid = torch.ones(B, S, dtype=torch.bool, device=idx.device)
        start = torch.zeros(B, dtype=torch.long, device=idx.device) if start is None else start
        q_pos = torch.arange(past, S, device=idx.device)
        pos = (q_pos[None, :] - start[:, None]).clamp(0, self.cfg.block_size - 1)  # (B, T)
        causal = torch.arange(S, device=idx.device)[None, :] <= q_pos[:, None]  # (T, S)
        mask = causal[None, None] & valid[:, None, None, :]
        mask = mask | ~mask.any(-1, keepdim=True)  # rows of pure padding attend to all (unused)
        x = self.tok(idx) + self.pos(pos)
        new = []
        for i, blk in enumerate(self.blocks):
            x, kv = blk(x, mask, None if cache is None else cache[i])
            new.append(kv)
        return self.ln_f(x) @ self.tok.weight.T, new

    @torch.no_grad()
    def sample(self, prompts: list[str], max_new: int = 40, temperature: float = 1.0,
               generator: torch.Generator | None = None, return_ended: bool = False):  # fmt: skip
        """Completions of ``prompts`` up to EOS (excluded) or ``max_new`` characters.
        temperature 0 is greedy. With ``return_ended``, also whether each one ended with EOS (a
        truncated one did not: scoring must not credit it an EOS it never drew)."""
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        ids, valid = self.batch(prompts, left=True)
        B, T = ids.shape
        max_new = min(max_new, self.cfg.block_size - T - 1)  # room for the EOS when scored
        if max_new < 1:
            raise ValueError(f"a prompt is {T} characters: no room under block_size "
                             f"{self.cfg.block_size}")  # fmt: skip
        start = (~valid).sum(1)
        logits, cache = self(ids, valid, start=start)
        eos = self.stoi[EOS]
        out = torch.zeros(B, 0, dtype=torch.long, device=ids.device)
        done = torch.zeros(B, dtype=torch.bool, device=ids.device)
        for _ in range(max_new):
            last = logits[:, -1].float()
            last[:, 0] = -torch.inf  # never emit padding
            if temperature == 0:
                nxt = last.argmax(-1)
            else:
                probs = torch.softmax(last / temperature, -1)
                nxt = (
                    torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(ids.device)
                )
            nxt = torch.where(done, torch.zeros_like(nxt), nxt)
            out = torch.cat([out, nxt[:, None]], 1)
            done = done | (nxt == eos)
            if done.all():
                break
            valid = torch.cat([valid, ~done[:, None] | (nxt[:, None] == eos)], 1)
            logits, cache = self(nxt[:, None], valid, cache, start)
        texts = [self.decode(row).split(EOS)[0] for row in out.tolist()]
        return (texts, done.tolist()) if return_ended else texts

    def logprobs(self, prompts: list[str], completions: list[str], forward=None,
                 ended: list[bool] | None = None) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
        """Per-character log-probabilities of ``completions`` (+ EOS) given ``prompts``.

        ``forward`` is the module to run (a DistributedDataParallel wrapper of this model, so its
        gradient hooks fire); default this model. ``ended[i]`` False leaves completion i's EOS
        out of the mask (it was truncated, not ended). Returns logp (B, T-1) and mask (B, T-1),
        True on completion characters."""
        if len(prompts) != len(completions):
            raise ValueError("prompts and completions differ in length")
        texts = [p + c + EOS for p, c in zip(prompts, completions, strict=True)]
        ids, valid = self.batch(texts, left=False)
        logits, _ = (forward or self)(ids, valid)
        logp = (
            torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        )
        mask = torch.zeros_like(valid[:, 1:])
        for i, p in enumerate(prompts):
            n = len(p) + len(completions[i]) + (1 if ended is None or ended[i] else 0)
            mask[i, len(p) - 1 : n - 1] = True
        return logp, mask

    def loss(self, texts: list[str]) -> torch.Tensor:
        """Next-character cross-entropy over the non-padding characters of ``texts``."""
        ids, valid = self.batch(texts, left=False)
        logits, _ = self(ids, valid)
        tgt = ids[:, 1:].masked_fill(~valid[:, 1:], -100)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tgt.reshape(-1),
                               ignore_index=-100)  # fmt: skip

    # -- weights as data -----------------------------------------------------------------------
    def save_pretrained(self, path: str | os.PathLike, meta: dict | None = None) -> Path:
        """model.safetensors + config.json, each written atomically."""
        from safetensors.torch import save_file

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        fd, tmp = tempfile.mkstemp(dir=path, suffix=".tmp")
        os.close(fd)
        save_file(state, tmp)
        os.replace(tmp, path / "model.safetensors")
        fd, tmp = tempfile.mkstemp(dir=path, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({**asdict(self.cfg), "alphabet": self.vocab, "meta": meta or {}}, f)
        os.replace(tmp, path / "config.json")
        return path

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, device: str = "cpu") -> CharGPT:
        from safetensors.torch import load_file

        path = Path(path)
        if not (path / "config.json").is_file() or not (path / "model.safetensors").is_file():
            raise ValueError(f"{path} is not a CharGPT folder (needs config.json and "
                             "model.safetensors)")  # fmt: skip
        try:
            raw = json.loads((path / "config.json").read_text())
            meta = raw.pop("meta", {})
            model = cls(GPTConfig(**raw))
        except (json.JSONDecodeError, TypeError) as e:
            raise ValueError(f"{path / 'config.json'} is malformed: {e}") from None
        model.load_state_dict(load_file(path / "model.safetensors"))
        model.meta = meta
        return model.to(device)
