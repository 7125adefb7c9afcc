"""Pinned, marker-checked virtual environments for the peer mechanisms (bench/peers*.py).

Each peer lives in a venv of its own, built by :func:`build_venv` from install steps and
pip constraints. A JSON marker in the venv records what was asked (``requested``) and the
resolved ``pip freeze``; :func:`venv_ready` compares the marker with what is asked now, so a
build is skipped when nothing changed and redone when the pins or the Python did.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

__all__ = ["build_venv", "ensure_command", "venv_python", "venv_ready"]


def venv_python(venv: Path) -> Path:
    """The venv's interpreter (``bin/python``; ``Scripts/python.exe`` on Windows)."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def venv_ready(venv: Path, marker: str, requested: dict) -> bool:
    """True when ``venv`` exists and its ``marker`` file records ``requested``."""
    path = venv / marker
    if not (venv_python(venv).exists() and path.exists()):
        return False
    try:
        return json.loads(path.read_text()).get("requested") == requested
    except (OSError, ValueError):
        return False


def build_venv(venv: Path, *, label: str, marker: str, requested: dict, pins: Sequence[str],
               constraints_name: str, steps: Sequence[Sequence[str]], check: str) -> Path:
    """Create ``venv`` (if missing), run each pip install step (arguments after ``pip
    install -c constraints``), run the ``check`` program in it (it must exit 0), write the
    marker and return the venv's python. Idempotent: a ready venv is left as it is."""
    python = venv_python(venv)
    if venv_ready(venv, marker, requested):
        print(f"{label} venv ready: {venv}", flush=True)
        return python
    started = time.perf_counter()
    if not python.exists():
        print(f"creating {label} venv {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "--upgrade", "pip"], check=True)
    constraints = venv / constraints_name
    constraints.write_text("\n".join(pins) + "\n")
    for step in steps:
        print(f"pip install {' '.join(step)}  (pinned: {constraints})", flush=True)
        subprocess.run([str(python), "-m", "pip", "install", "-c", str(constraints), *step], check=True)
    subprocess.run([str(python), "-c", check], check=True, capture_output=True, text=True)
    freeze = subprocess.run([str(python), "-m", "pip", "freeze"], check=True, capture_output=True,
                            text=True).stdout.split()
    (venv / marker).write_text(json.dumps({"requested": requested, "freeze": freeze}, indent=1))
    print(f"{label} venv built in {time.perf_counter() - started:.0f}s: {venv}", flush=True)
    return python


def ensure_command(description: str, ensure: Callable[[], Path], what: str = "the venv") -> int:
    """A peer module's command line: ``--ensure`` builds or checks its venv with ``ensure``;
    ``description`` (the module's docstring) is the help text. Returns the exit status, 0."""
    import argparse

    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ensure", action="store_true", help=f"build or check {what}")
    if parser.parse_args().ensure:
        ensure()
    return 0
