"""How many threads the Numba kernels run: no more than the CPUs this process may use.

Numba starts one thread per CPU of the machine (``os.cpu_count()``), which ignores the CPU
affinity a scheduler sets (``taskset``, Slurm, Kubernetes' static CPU manager) and the CPU
quota of a container (cgroups' ``cpu.max``): in a 2-CPU container on a 64-core host every
parallel kernel would run 64 threads on 2 CPUs. :func:`limit_numba_threads` lowers Numba's
default to :func:`available_cpus` when the package is imported, unless ``NUMBA_NUM_THREADS`` is
set (that setting always wins: set it to 1 where another busy process shares the CPUs, which
on a 2-core machine made one fit 3-4x faster, issue #78).
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

__all__ = ["available_cpus", "limit_numba_threads"]

CGROUP_ROOT = Path("/sys/fs/cgroup")


def available_cpus(cgroup_root: Path = CGROUP_ROOT) -> int:
    """The CPUs this process may use (>= 1): the machine's, at most its affinity mask's, at most
    its cgroup CPU quota rounded up (cgroup v2 ``cpu.max``, or v1 ``cpu.cfs_quota_us`` over
    ``cpu.cfs_period_us``; no quota: no limit)."""
    cpus = os.cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        cpus = min(cpus, len(os.sched_getaffinity(0)))
    quota = _cgroup_quota(cgroup_root)
    if quota is not None:
        cpus = min(cpus, max(1, math.ceil(quota)))
    return max(1, cpus)


def _cgroup_quota(root: Path) -> float | None:
    """CPUs of the cgroup's quota (a fraction allowed), or None without one or where unreadable."""
    try:
        v2 = root / "cpu.max"
        if v2.is_file():
            quota, period = v2.read_text().split()[:2]
            return None if quota == "max" else int(quota) / int(period)
        quota_file, period_file = root / "cpu" / "cpu.cfs_quota_us", root / "cpu" / "cpu.cfs_period_us"
        if quota_file.is_file() and period_file.is_file():
            quota_us, period_us = int(quota_file.read_text()), int(period_file.read_text())
            return None if quota_us <= 0 or period_us <= 0 else quota_us / period_us
    except (OSError, ValueError):
        return None
    return None


def limit_numba_threads(cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """Lower Numba's default thread count to :func:`available_cpus`, unless the user set
    ``NUMBA_NUM_THREADS``; returns the count set, or None when nothing was changed. Before
    Numba is imported this sets ``NUMBA_NUM_THREADS`` (every thread's default, child processes
    included); after, it calls ``numba.set_num_threads`` for the importing thread."""
    if os.environ.get("NUMBA_NUM_THREADS"):
        return None
    cpus = available_cpus(cgroup_root)
    if "numba" not in sys.modules:
        if cpus >= (os.cpu_count() or 1):
            return None
        os.environ["NUMBA_NUM_THREADS"] = str(cpus)
        return cpus
    import numba

    if cpus >= numba.config.NUMBA_NUM_THREADS:
        return None
    numba.set_num_threads(cpus)
    return cpus
