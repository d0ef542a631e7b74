#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run on a GPU machine (the device tool), sized for <= 8 minutes on
# one H200: the GPU tests (compile among them), the GPU step benchmark, the framework overhead in fp32 and
# bf16-mixed, the parquet feed onto the GPU, and GPT-2 124M against a nanoGPT-style hand-written loop.
# Uses the machine's own python3 (with CUDA torch and Lightning); ember from this checkout.
#   bash scripts/gpu_checks.sh [OUT_DIR]      (Fashion-MNIST from .gpudata/fashion-mnist when present)
#   GPU_CHECKS_BENCH=0: the tests only.       Exit status: non-zero if any test or benchmark failed.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu_checks}}"
mkdir -p "$out"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=":4096:8"
# No CUDA: say so and stop (a run that skipped every GPU test would otherwise look like a pass).
if ! python3 -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
    echo "gpu_checks.sh: FAILED: no CUDA device (torch.cuda.is_available() is False); run it on a GPU machine" >&2
    exit 2
fi
if [ -d .gpudata/fashion-mnist ]; then
    mkdir -p ~/.torch/datasets && cp -r .gpudata/fashion-mnist ~/.torch/datasets/
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
python3 -c "import torch, lightning, pyarrow; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'lightning', lightning.__version__, 'pyarrow', pyarrow.__version__)" | tee -a "$out/device.txt"
status=0
stage() {  # stage NAME SECONDS COMMAND...: run with a time limit, log to OUT/NAME.log, remember a failure
    local name=$1 limit=$2; shift 2
    echo "=== $name (limit ${limit}s) ==="
    timeout "$limit" "$@" 2>&1 | tee "$out/$name.log"
    local rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || { echo "=== $name FAILED (exit $rc) ===" | tee -a "$out/failures.txt"; status=1; }
}
# Time limits add up to 480 s (8 minutes) of stages. Two processes: the pool's GPU workers are forked, so tests/inference/test_gpu.py needs a process in which
# CUDA was never initialized (the tests in tests/gpu initialize it).
stage gpu_tests 120 python3 -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" -rs \
    --durations=15 tests/gpu
stage gpu_inference_tests 45 python3 -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" -rs \
    tests/inference/test_gpu.py
[ "${GPU_CHECKS_BENCH:-1}" = 1 ] || exit "$status"
stage gpu_step 45 python3 benchmarks/bench_gpu_step.py --quick --out "$out/gpu_step.json"
stage gpu_overhead 75 python3 benchmarks/bench_gpu_overhead.py --steps 2000 --rounds 3 --out "$out/gpu_overhead.json"
stage gpu_feed 45 python3 benchmarks/bench_gpu_feed.py --rows 300000 --rounds 3 --out "$out/gpu_feed.json"
stage gpt2 150 python3 benchmarks/bench_gpt2.py --steps 25 --warmup 10 --out "$out/gpt2.json"
[ -f "$out/failures.txt" ] && cat "$out/failures.txt"
exit "$status"
