"""Runs the CUDA kernel tests under Numba's CUDA simulator, so that the README's one test
command checks the CUDA backend on machines without a GPU (CI included).

The simulator has to be switched on before Numba is imported, hence the subprocess. On a real
GPU, ``tests/test_kernels_cuda.py`` runs directly in the main session instead.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from numba import config as numba_config

from polars_rap.kernels import get_backend

CUDA_TESTS = Path(__file__).with_name("test_kernels_cuda.py")


@pytest.mark.skipif(bool(numba_config.ENABLE_CUDASIM),
                    reason="already under the simulator: test_kernels_cuda.py runs in this session")
@pytest.mark.skipif(get_backend("cuda").is_available(),
                    reason="a real GPU is present: test_kernels_cuda.py runs in this session")
def test_cuda_kernels_pass_under_the_simulator():
    environment = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(CUDA_TESTS)],
        env=environment, capture_output=True, text=True, timeout=1800,
    )
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in summary and "skipped" not in summary, summary
