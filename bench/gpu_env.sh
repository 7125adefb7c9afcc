#!/usr/bin/env bash
# Sourced by bench/gpu_session.sh, gpu_round.sh and gpu_exact.sh: the GPU machine's
# environment (polars from .whl/ when the image lacks it, the numba-cuda/NumPy 2.5 shim),
# env.txt in $OUT, and `stage SECONDS LOG COMMAND...`. Expects OUT and DATA.
set -uo pipefail
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 1
    export PYTHONPATH="/tmp/site:$PWD/src"
else
    export PYTHONPATH="$PWD/src"
fi

# numba-cuda 0.30 registers an overload of np.row_stack, which NumPy 2.5 removed: on an image
# that pairs them, every kernel compile fails. Alias it for this session's processes only.
if ! python3 -c "import numpy; numpy.row_stack" 2>/dev/null; then
    mkdir -p /tmp/shim
    printf 'import numpy\nnumpy.row_stack = numpy.vstack\n' >/tmp/shim/sitecustomize.py
    export PYTHONPATH="/tmp/shim:$PYTHONPATH"
    echo "numpy has no row_stack: aliased to vstack for numba-cuda (/tmp/shim/sitecustomize.py)"
fi

{
    date -u; nvidia-smi; nproc; uptime
    python3 - <<'EOF'
import importlib.metadata as md
for name in ("numba", "numba-cuda", "llvmlite", "numpy", "polars", "jax", "torch"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "not installed")
EOF
} >"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

stage() {  # stage SECONDS LOG COMMAND...: run with a time limit, output appended to LOG
    local seconds=$1 log=$2
    shift 2
    echo "=== $(date -u +%T) $* (limit ${seconds}s)" | tee -a "$log"
    timeout --signal=INT --kill-after=10 "$seconds" "$@" 2>&1 | tee -a "$log"
    echo "=== exit ${PIPESTATUS[0]}" | tee -a "$log"
}

