"""Fixtures shared by the test modules."""

import numpy as np
import pytest

from polars_rap import annealing, datasets

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
    from polars_rap.domain import Domain

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
