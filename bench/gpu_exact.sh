#!/usr/bin/env bash
# Issue #18, exact answers: the CUDA tests, then variants of the exact kernels timed on
# kernels_cpu.py's workload in one GPU call on one machine. Each argument is one variant: a
# space-separated list of cuda_config overrides ("" for the defaults), recorded as
# $OUT/exact_<name>.json (<name>: the overrides joined by "_", or "default"):
#   OUT=/some/dir bash bench/gpu_exact.sh "" "EXACT_SORT_ROWS=0"   # with .whl/ and .devdata/ carried
# TESTS=0 skips the tests (the full CUDA suite, ~100 s on an H200).
set -uo pipefail
OUT=${OUT:?set OUT} DATA=${DATA:-.devdata}
source "$(dirname "$0")/gpu_env.sh"
if [[ "${TESTS:-1}" != 0 ]]; then
    stage "${TESTS_S:-130}" "$OUT/pytest.log" python3 -m pytest -q -p no:cacheprovider \
        -o addopts="-ra --durations=10 --tb=short" tests/test_kernels_cuda.py tests/test_kernels_cuda_scale.py
fi
for variant in "$@"; do
    name=${variant// /_}
    name=${name//=/-}
    name=${name:-default}
    # shellcheck disable=SC2086  # the overrides are separate words
    stage "${EXACT_S:-50}" "$OUT/bench.log" python3 bench/gpu_kernels.py --sections exact --exact 2000 100 \
        ${variant:+--set $variant} --out-dir "$OUT/$name"
    cp "$OUT/$name"/gpu_*.json "$OUT/exact_$name.json" 2>/dev/null
done
