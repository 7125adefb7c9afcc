"""The kernels' threads follow the CPUs the process may use (its affinity and its cgroup's CPU
quota), not the machine's, and a user's ``NUMBA_NUM_THREADS`` always wins (issue #78)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from polars_rap.threads import available_cpus

SRC = str(Path(__file__).resolve().parents[1] / "src")
PINNED = hasattr(os, "sched_setaffinity")


def _machine() -> int:
    cpus = os.cpu_count() or 1
    return min(cpus, len(os.sched_getaffinity(0))) if PINNED else cpus


@pytest.mark.parametrize(("files", "quota"), [
    ({"cpu.max": "150000 100000\n"}, 2), ({"cpu.max": "50000 100000\n"}, 1), ({"cpu.max": "max 100000\n"}, None),
    ({"cpu/cpu.cfs_quota_us": "100000\n", "cpu/cpu.cfs_period_us": "100000\n"}, 1),
    ({"cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"}, None),
    ({"cpu.max": "garbled\n"}, None), ({}, None),
])
def test_the_cgroup_quota_caps_the_cpus_rounded_up(tmp_path, files, quota):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert available_cpus(tmp_path) == (_machine() if quota is None else min(_machine(), quota))


def _threads_after_import(code: str, **env: str) -> int:
    environment = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    environment.update(PYTHONPATH=os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")])), **env)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return int(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not PINNED, reason="needs os.sched_setaffinity")
def test_a_process_pinned_to_one_cpu_runs_one_kernel_thread():
    pin = "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
    assert _threads_after_import(pin + "import polars_rap, numba; print(numba.config.NUMBA_NUM_THREADS)") == 1
    # Numba imported first: the importing thread's count is lowered instead
    assert _threads_after_import(pin + "import numba, polars_rap; print(numba.get_num_threads())") == 1


@pytest.mark.skipif(not PINNED, reason="needs os.sched_setaffinity")
def test_numba_num_threads_set_by_the_user_wins():
    pin = "import os; os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]}); "
    code = pin + "import polars_rap, numba; print(numba.config.NUMBA_NUM_THREADS)"
    assert _threads_after_import(code, NUMBA_NUM_THREADS="1") == 1
    if _machine() >= 2:  # more threads than the pinned CPU: the user's choice stands
        assert _threads_after_import(code, NUMBA_NUM_THREADS="2") == 2
