#!/usr/bin/env bash
# LUCID's kernel timings on a CUDA machine that has torch, triton and pytest but no uv and no
# network (run tools/gpu_check.sh first for every package); from the repository root,
#     bash packages/llm/lucid/scripts/gpu_check.sh
# 1. correctness: the gpu-marked tests of the Triton kernels against their references
#    (flash-style attention fwd+bwd, the LUCID solve, the fused decode step);
# 2. timings: `icml26-lucid bench` on CUDA (bf16; LUCID = Triton solve + Triton attention against
#    SDPA/FlashAttention-2, our attention kernel alone, decode), rows also in $OUT/lucid_bench.json.
# bench.py is loaded by path so that the run needs neither transformers nor tyro.
set -euo pipefail
export PYTHONPATH="kernels/src:shared/testing/src${PYTHONPATH:+:$PYTHONPATH}"
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
python -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python -m pytest -q -p icml26.testing.plugin -m gpu -rs \
    kernels/tests/test_attention.py kernels/tests/test_lucid.py
python - <<'PY'
import importlib.util
import json
import os

spec = importlib.util.spec_from_file_location(
    "lucid_bench", "packages/llm/lucid/src/icml26/lucid/bench.py"
)
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
rows = bench.run_bench(bench.BenchConfig(repeats=10))
out = os.environ.get("OUT", ".")
with open(os.path.join(out, "lucid_bench.json"), "w") as f:
    json.dump(rows, f, indent=1)
PY
