#!/usr/bin/env bash
# One tuning round of issue #18 on a GPU machine, in one command from the repository root:
# the CUDA tests, then the changed paths timed before and after on the same device. "Before"
# is the code of the commit named in .before/COMMIT (its src/ and bench/, unpacked into
# .before/ by `bash bench/gpu_round.sh --prepare REV` on the 2-core machine and carried along);
# "after" is the working tree. Each stage has its own time limit, so a slow one cannot starve
# the rest, and every JSON is rewritten after each section. STAGES picks the stages.
#
#   bash bench/gpu_round.sh --prepare REV     # here: unpack REV's src/ and bench/ into .before/
#   OUT=/some/dir DATA=.devdata bash bench/gpu_round.sh   # on the GPU machine
#
# OUT receives env.txt, pytest.log, bench.log, gpu_<device>.json (after) and
# before/gpu_<device>.json (before).
set -uo pipefail
if [[ "${1:-}" == "--prepare" ]]; then
    rev=${2:?name the commit to compare against}
    rm -rf .before && mkdir -p .before
    git archive "$rev" src bench | tar -x -C .before
    # the results stay behind, but for the CPU figure the exact section compares with
    find .before/bench/results -type f ! -name kernels_cpu.json -delete
    git rev-parse "$rev" >.before/COMMIT
    echo "prepared .before/ from $(cat .before/COMMIT)"
    exit 0
fi
OUT=${OUT:-bench/results/gpu_round}
DATA=${DATA:-../shared/data}
STAGES=${STAGES:-"tests exact tune before-exact before-tune grid e2e"}
source "$(dirname "$0")/gpu_env.sh"
wanted() { [[ " $STAGES " == *" $1 "* ]]; }

AFTER=(python3 bench/gpu_kernels.py --out-dir "$OUT" --data-dir "$DATA")
BEFORE=(python3 .before/bench/gpu_kernels.py --out-dir "$OUT/before" --data-dir "$DATA")
[[ -f .before/COMMIT ]] && echo "before = $(cat .before/COMMIT)" | tee -a "$OUT/bench.log"
wanted tests && stage "${TESTS_S:-110}" "$OUT/pytest.log" python3 -m pytest -q -p no:cacheprovider \
    -o addopts="-ra --durations=10 --tb=short" tests/test_kernels_cuda.py tests/test_kernels_cuda_scale.py
wanted exact && stage "${EXACT_S:-45}" "$OUT/bench.log" "${AFTER[@]}" --sections exact
wanted tune && stage "${TUNE_S:-50}" "$OUT/bench.log" "${AFTER[@]}" --sections tune ${TUNE_ARGS:-}
wanted before-exact && stage "${BEFORE_S:-35}" "$OUT/bench.log" "${BEFORE[@]}" --sections exact
wanted before-tune && stage "${BEFORE_S:-35}" "$OUT/bench.log" "${BEFORE[@]}" --sections tune
wanted grid && stage "${GRID_S:-70}" "$OUT/bench.log" "${AFTER[@]}" --sections kernels baselines \
    --n-rel 1000 10000 --m 1000 100000
wanted e2e && stage "${E2E_S:-60}" "$OUT/bench.log" "${AFTER[@]}" --sections e2e --e2e-backends cuda \
    --e2e-seeds 0 1 2
ls -la "$OUT" "$OUT/before" 2>/dev/null
