#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one run on a GPU machine (the device tool): the GPU tests and the GPU
# step benchmark. Uses the machine's own python3 (with CUDA torch and Lightning); ember from this checkout.
#   bash scripts/gpu_checks.sh [OUT_DIR]      (Fashion-MNIST from .gpudata/fashion-mnist when present)
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-/tmp/gpu_checks}}"
mkdir -p "$out"
export PYTHONPATH="$PWD" PYTHONUNBUFFERED=1 CUBLAS_WORKSPACE_CONFIG=":4096:8"
if [ -d .gpudata/fashion-mnist ]; then
    mkdir -p ~/.torch/datasets && cp -r .gpudata/fashion-mnist ~/.torch/datasets/
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
python3 -c "import torch, lightning, pyarrow; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'lightning', lightning.__version__, 'pyarrow', pyarrow.__version__)" | tee -a "$out/device.txt"
# Two processes: the pool's GPU workers are forked, so tests/inference/test_gpu.py needs a process in which
# CUDA was never initialized (the tests in tests/gpu initialize it).
python3 -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" -rs --durations=15 \
    tests/gpu 2>&1 | tee "$out/gpu_tests.log"
tests=${PIPESTATUS[0]}
python3 -m pytest -q -p no:cacheprovider -o addopts="--import-mode=importlib" -rs \
    tests/inference/test_gpu.py 2>&1 | tee -a "$out/gpu_tests.log"
tests=$(( tests | PIPESTATUS[0] ))
[ "${GPU_CHECKS_BENCH:-1}" = 1 ] || exit "$tests"
python3 benchmarks/bench_gpu_step.py --out "$out/gpu_step.json" 2>&1 | tee "$out/gpu_bench.log"
python3 -c "import sys, json; sys.path.insert(0, 'benchmarks'); from harness import from_dict; from report import table; print(table([from_dict(json.load(open('$out/gpu_step.json')))]))" | tee "$out/gpu_step.md"
exit "$tests"
