"""``synthesize(output=...)``: the synthetic rows written as Parquet parts, block by block
(issue 17), instead of held in memory; the folder is checked before any row is read, the parts
depend on the seed only, and the report's answers are read back from them."""

from __future__ import annotations

import filecmp
from pathlib import Path
from unittest import mock

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.pipeline import fitting as fitting_stage
from polars_rap.pipeline import release

DOMAIN = {"age": {"bounds": (18, 90), "integer": True}, "sex": ["F", "M"], "y": ["no", "yes"]}
SETTINGS = dict(epsilon=1.0, delta=1e-6, domain=DOMAIN, labels=["y"], seed=5, progress=False, backend="cpu",
                strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
                                                    workload=polars_rap.WorkloadSize(n_linear_thresholds=40),
                                                    projection=polars_rap.ProjectionConfig(max_steps=20)))


@pytest.fixture(scope="module")
def frame() -> pl.DataFrame:
    rng = np.random.default_rng(0)
    n = 3_000
    return pl.DataFrame({"age": rng.integers(18, 91, n), "sex": rng.choice(["F", "M"], n).tolist(),
                         "y": rng.choice(["no", "yes"], n).tolist()})


def test_parts_hold_the_rows_and_the_report_reads_them_back(frame, tmp_path) -> None:
    """2.5 blocks of rows land in three parts; ``.data`` scans them with the input's schema;
    the model is the in-memory run's (same relaxed rows, same ledger) and the report's
    synthetic answers were computed on the parts, not on rows held elsewhere."""
    seen = []
    real = release.exact_answers

    def recording(source, *args, **kwargs):
        seen.append(source)
        return real(source, *args, **kwargs)

    with mock.patch.object(release, "exact_answers", recording):
        written = polars_rap.synthesize(frame, rows=2_500, output=tmp_path / "out", output_block_rows=1_000,
                                        **SETTINGS)
    in_memory = polars_rap.synthesize(frame, rows=2_500, **SETTINGS)
    assert [Path(f).name for f in written.files] == [f"part-00000{i}.parquet" for i in range(3)]
    assert isinstance(written.data, pl.LazyFrame) and in_memory.files is None
    rows = written.data.collect()
    assert rows.height == 2_500 and rows.schema == frame.schema
    assert rows.equals(pl.read_parquet(written.files))
    assert np.array_equal(written.relaxed, in_memory.relaxed)
    assert written.report.events == in_memory.report.events
    assert len(seen) == 1 and seen[0].lazy is not None and seen[0].lazy.collect().equals(rows)
    assert "2,500 rows x 3 columns" in repr(written) and "2,500 synthetic rows" in written._repr_html_()


def test_parts_depend_on_the_seed_only(frame, tmp_path) -> None:
    """The same seed writes the same bytes; the parts differ from each other."""
    first = polars_rap.synthesize(frame, output=tmp_path / "a", output_block_rows=1_000, **SETTINGS).files
    again = polars_rap.synthesize(frame, output=tmp_path / "b", output_block_rows=1_000, **SETTINGS).files
    assert len(first) == 3 and all(filecmp.cmp(a, b, shallow=False) for a, b in zip(first, again, strict=True))
    assert not pl.read_parquet(first[0]).equals(pl.read_parquet(first[1]))


@pytest.mark.parametrize("kind", ["file", "foreign files", "earlier parts"])
def test_a_folder_in_use_is_refused_before_any_row_is_read(frame, tmp_path, kind) -> None:
    """A file, a folder holding other files, and one holding an earlier run's parts are each a
    ``FileExistsError`` naming the path, raised before the pass over the sensitive rows."""
    target = tmp_path / "out"
    if kind == "file":
        target.write_text("x")
    else:
        target.mkdir()
        (target / ("notes.txt" if kind == "foreign files" else "part-000000.parquet")).write_text("x")
    with mock.patch.object(fitting_stage, "exact_answers", side_effect=AssertionError("read the rows")), \
            pytest.raises(FileExistsError, match="cannot write partitioned Parquet to .*out"):
        polars_rap.synthesize(frame, output=target, **SETTINGS)


def test_a_bad_block_size_is_a_parameter_error(frame, tmp_path) -> None:
    for bad in (0, 2.5, True):
        with pytest.raises(polars_rap.ParameterError, match="output_block_rows"):
            polars_rap.synthesize(frame, output=tmp_path / "out", output_block_rows=bad, **SETTINGS)
