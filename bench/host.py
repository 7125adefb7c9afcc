"""The machine a benchmark ran on, recorded beside every figure in ``bench/results/``."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
"""The shared survey tables (``../shared/data`` beside the repository): the 51 ACS state files,
the NIST excerpts, CPS; the default of every benchmark that reads more than the bundled tasks."""


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


def git_commit(root: str | os.PathLike | None = None) -> str:
    """HEAD's hash in ``root`` (default: this repository), with ``-dirty`` when tracked files
    outside ``bench/results/`` have uncommitted changes (so a figure is never credited to a commit
    it did not run, while the results a run appends do not count); ``unknown`` outside a git checkout."""
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", *args], capture_output=True, text=True, cwd=root)
        except OSError:
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD") or "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)bench/results")
    return commit + ("-dirty" if changed else "")


def own_peak_rss_mib() -> float:
    """Peak resident set size (MiB) of this process's own memory: ``VmHWM`` of
    ``/proc/self/status`` on Linux. ``ru_maxrss`` is not that: a process started by
    ``subprocess`` (fork + exec) inherits its parent's high-water mark, so a stage spawned by a
    parent holding 480 MiB reported at least 480 MiB whatever it used itself (measured: a
    child of a 300 MiB parent reports ``ru_maxrss`` 327 MiB, ``VmHWM`` 13 MiB). Elsewhere,
    ``ru_maxrss`` (KiB on Linux and BSD, bytes on macOS)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024
