#!/usr/bin/env bash
# Everything issue #18 asks of a GPU machine, in one command from the repository root:
# environment, the CUDA tests (tiny sizes and at scale), the kernel benchmark, the framework
# baselines, the end-to-end runs and the geometry sweep. Each stage has its own time limit, so
# a slow one cannot starve the rest; bench/gpu_kernels.py rewrites its JSON after every
# section, so what ran is kept.
#
#   OUT=/some/dir DATA=../shared/data bash bench/gpu_session.sh
#
# OUT (default bench/results/gpu_session) receives env.txt, pytest.log, bench.log, the
# gpu_<device>.json record and e2e_synthetic.parquet. Python packages missing on the machine
# (polars) can come as wheels in .whl/ (installed into /tmp/site first). The 2-core CPU
# baseline of the end-to-end comparison runs on the 2-core machine: bench/gpu_e2e_cpu.py.
set -uo pipefail
OUT=${OUT:-bench/results/gpu_session}
DATA=${DATA:-../shared/data}
source "$(dirname "$0")/gpu_env.sh"

stage "${TESTS_S:-170}" "$OUT/pytest.log" python3 -m pytest -q -p no:cacheprovider \
    -o addopts="-ra --durations=10 --tb=short" tests/test_kernels_cuda.py tests/test_kernels_cuda_scale.py
BENCH=(python3 bench/gpu_kernels.py --out-dir "$OUT" --data-dir "$DATA")
stage "${KERNELS_S:-120}" "$OUT/bench.log" "${BENCH[@]}" --sections kernels exact
stage "${BASELINES_S:-60}" "$OUT/bench.log" "${BENCH[@]}" --sections baselines
stage "${E2E_S:-80}" "$OUT/bench.log" "${BENCH[@]}" --sections e2e --e2e-backends cuda \
    --e2e-seeds 0 1 2
stage "${TUNE_S:-30}" "$OUT/bench.log" "${BENCH[@]}" --sections tune
ls -la "$OUT"
