"""The notebooks in notebooks/ run end to end (quick mode) and are committed executed.

Each notebook reads ``POLARS_RAP_NOTEBOOK_QUICK=1`` to do the same steps at toy sizes; the
committed copies were executed without it, and must carry their outputs.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_the_three_notebooks_are_there():
    assert {p.stem for p in NOTEBOOKS} >= {"quickstart", "etl_parquet", "paper_figures"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_executed_without_errors(path):
    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code, f"{path.name} has no code"
    assert [cell.execution_count for cell in code] == list(range(1, len(code) + 1)), (
        f"{path.name}: execute it top to bottom once before committing (execution counts out of order)")
    errors = [output for cell in code for output in cell.outputs if output.output_type == "error"]
    assert not errors, f"{path.name} was committed with an error: {errors[0].ename}: {errors[0].evalue}"
    assert all(cell.outputs for cell in code[-2:]), f"{path.name}: its last cells have no output"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes_in_quick_mode(path, tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_RAP_NOTEBOOK_QUICK", "1")
    monkeypatch.setenv("NUMBA_NUM_THREADS", os.environ.get("NUMBA_NUM_THREADS", "2"))
    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(notebook, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    client.execute()  # raises CellExecutionError naming the cell on any failure
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.execution_count for cell in code)
