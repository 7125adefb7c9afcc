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
