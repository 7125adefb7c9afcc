#!/usr/bin/env bash
# Issue #18, exact answers: the tiled kernel against the warp-per-query kernel
# (cuda_config.EXACT_WARP_PER_QUERY) on kernels_cpu.py's workload, one GPU call, same machine:
#   OUT=/some/dir bash bench/gpu_exact_warp.sh      # with .whl/ and .devdata/ carried
set -uo pipefail
OUT=${OUT:?set OUT} DATA=${DATA:-.devdata}
source "$(dirname "$0")/gpu_env.sh"
stage 40 "$OUT/pytest.log" python3 -m pytest -q -p no:cacheprovider -o addopts="-ra --tb=short" \
    tests/test_kernels_cuda.py -k "exact or tiled or histogram or warp"
stage 50 "$OUT/bench.log" python3 bench/gpu_kernels.py --sections exact --exact 2000 100 --out-dir "$OUT/tiled"
stage 50 "$OUT/bench.log" python3 bench/gpu_kernels.py --sections exact --exact 2000 100 \
    --set EXACT_WARP_PER_QUERY=1 --out-dir "$OUT/warp"
