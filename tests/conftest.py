"""Fixtures shared by the test modules, and the Hypothesis profile they run under."""

import os

import numpy as np
import pytest
from hypothesis import settings

from polars_rap.fit import annealing
from polars_rap.io import datasets

# Property tests draw the same examples on every run by default ("ci": derived from each test), so
# that the README's test command on a clean clone passes or fails alike every time; new examples are
# drawn with POLARS_RAP_HYPOTHESIS=explore (a failure prints its reproduction blob). Drawn afresh on
# each run, the boundary fuzz test once failed CI on a bug it had only then come across.
settings.register_profile("ci", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("POLARS_RAP_HYPOTHESIS", "ci"))

SLOW_FILES_FIRST = ("test_cuda_simulator.py", "test_notebooks.py", "test_annealing.py", "test_ray_engine.py",
                    "test_cli_evaluate.py")
"""Test files of a minute or more on CI's 2 cores, longest first."""


def pytest_collection_modifyitems(items) -> None:
    """The long test files first, each file's tests in their own order: with ``-n auto --dist
    loadfile`` (the README's test command) a worker starts each while the others take the many
    short files, instead of one worker finishing a long file alone at the end."""
    rank = {name: i for i, name in enumerate(SLOW_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(SLOW_FILES_FIRST)))


@pytest.fixture(scope="session")
def task() -> datasets.TaskData:
    """The bundled ACS income task (California), loaded once per test session."""
    return datasets.load_task("acs-income-CA")


@pytest.fixture(scope="session")
def domain(task):
    """The bundled CA task's public domain (its labels included); a test module may define its own."""
    from polars_rap.schema.domain import Domain

    return Domain.from_mapping(task.frame.schema, task.domain, task.labels)


@pytest.fixture
def last_candidate_picks(monkeypatch) -> list[int]:
    """Every annealed round's Gumbel selection still charged, but forced to pick the last
    candidate (the joined classes' groups follow the CM tables); the list gets each pick."""
    real_top_k, picked = annealing.gumbel_top_k, []

    def last_candidate(scores, k, l1, rho, ledger, rng, **kwargs):
        real_top_k(scores, k, l1, rho, ledger, rng, **kwargs)
        picked.append(len(scores) - 1)
        return np.array([len(scores) - 1])

    monkeypatch.setattr(annealing, "gumbel_top_k", last_candidate)
    return picked


@pytest.fixture
def acs_state_folder(tmp_path, monkeypatch):
    """A folder of three tiny ACS state files (CA: 40 rows of the bundled table, NY: 30, PR: 20),
    named as in shared/data and set as the data folder (``POLARS_RAP_DATA_DIR``)."""
    import importlib.resources

    import polars as pl

    resource = importlib.resources.files("polars_rap") / "data" / "acs2018_1yr_person_CA.parquet"
    with importlib.resources.as_file(resource) as path:
        raw = pl.read_parquet(path)
    for state, rows in (("CA", raw.head(40)), ("NY", raw.slice(40, 30)), ("PR", raw.slice(70, 20))):
        rows.write_parquet(tmp_path / f"acs2018_1yr_person_{state}.parquet")
    monkeypatch.setenv(datasets.DATA_DIR_ENV, str(tmp_path))
    return tmp_path

