"""Fixtures shared by the test modules."""

import pytest

from polars_rap import datasets


@pytest.fixture(scope="session")
def task() -> datasets.TaskData:
    """The bundled ACS income task (California), loaded once per test session."""
    return datasets.load_task("acs-income-CA")
