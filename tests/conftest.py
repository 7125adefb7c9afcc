"""Fixtures shared by the test modules."""

import pytest

from polars_rap import datasets


@pytest.fixture(scope="session")
def task() -> datasets.TaskData:
    """The bundled ACS income task (California), loaded once per test session."""
    return datasets.load_task("acs-income-CA")


@pytest.fixture(scope="session")
def domain(task):
    """The bundled CA task's public domain (its labels included); a test module may define its own."""
    from polars_rap.domain import Domain

    return Domain.from_mapping(task.frame.schema, task.domain, task.labels)
