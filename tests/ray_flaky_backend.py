"""A kernel backend for tests/test_ray_engine.py: the CPU kernels, except that the first call
on each distinct batch fails. Not a test module (no ``test_`` prefix); Ray workers import it
by name, so its folder is on their PYTHONPATH.

``RAY_FLAKY_DIR`` names a folder where one marker file per batch (keyed by a hash of the
batch's encoded arrays) records that the batch has failed once. The failure raises, or, when
a file ``exit-mode`` is in that folder, kills the worker process (as an OOM kill would).
Every call happens on a worker, never in the test process.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from polars_rap.kernels.cpu import answers_exact as _cpu_answers_exact
from polars_rap.kernels.cpu import answers_relaxed, loss_and_grad  # noqa: F401  (a full backend)


def answers_exact(codes: np.ndarray, numerics: np.ndarray, queries) -> np.ndarray:
    """The CPU kernel's answers, after failing once on this batch."""
    digest = hashlib.sha256(np.ascontiguousarray(codes).tobytes())
    digest.update(np.ascontiguousarray(numerics).tobytes())
    folder = os.environ["RAY_FLAKY_DIR"]
    marker = os.path.join(folder, digest.hexdigest()[:24])
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:  # failed once already: answer
        return _cpu_answers_exact(codes, numerics, queries)
    if os.path.exists(os.path.join(folder, "exit-mode")):
        os._exit(1)
    msg = "injected kernel failure"
    raise RuntimeError(msg)
