"""The benchmarks' access to the shared survey tables (``../shared/data``, which CI has)."""

from __future__ import annotations

from bench.host import SHARED_DATA
from bench.streaming import _state_files


def test_the_streaming_input_finds_the_51_state_tables() -> None:
    """bench.streaming (and bench.ray_pass on top of it) reads the 51 ACS state files from the
    shared folder when no environment variable names another (it once pointed at a constant
    that no longer existed, and failed before reading anything)."""
    files = _state_files()
    assert len(files) == 51 and all(path.parent == SHARED_DATA for path in files)


def test_every_bench_module_compiles() -> None:
    """Every script under bench/ is at least valid Python (most run only by hand, for minutes,
    so nothing else would notice a broken one before its next run)."""
    import py_compile
    from pathlib import Path

    scripts = sorted((Path(__file__).resolve().parents[1] / "bench").glob("*.py"))
    assert len(scripts) > 10
    for script in scripts:
        py_compile.compile(str(script), doraise=True)
