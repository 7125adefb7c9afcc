"""The machine a benchmark ran on, recorded beside every figure in ``bench/results/``."""

from __future__ import annotations


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``, e.g. ``AMD EPYC 7B13``; empty when it
    cannot be read (``platform.processor()`` is often empty on Linux, so callers fall back
    to it only after this)."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""
