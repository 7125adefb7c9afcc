"""Parquet inputs cut into pieces of row groups for Ray tasks (polars_rap.io.ray_parquet), without
Ray: the plan partitions the row groups, pieces stream their rows in batches of the asked size,
hive partition columns are read, and inputs of different columns are refused by name."""

from __future__ import annotations

import polars as pl
import pytest

from polars_rap.errors import DataError, ParameterError
from polars_rap.io.ray_parquet import describe_piece, piece_frames, plan_pieces


@pytest.fixture
def table_folder(tmp_path):
    """Two files of one table (x: 0..999 and 1000..1499) in row groups of 100 rows."""
    pl.DataFrame({"x": range(1_000), "y": [k % 3 for k in range(1_000)]}).write_parquet(
        tmp_path / "a.parquet", row_group_size=100)
    pl.DataFrame({"x": range(1_000, 1_500), "y": [k % 3 for k in range(500)]}).write_parquet(
        tmp_path / "b.parquet", row_group_size=100)
    return tmp_path


def _rows(plan, columns, batch_rows):
    frames = [f for piece in plan.pieces for f in piece_frames(piece, plan.schema, columns, batch_rows)]
    return frames, pl.concat(frames)


@pytest.mark.parametrize(("piece_rows", "pieces"), [(1, 15), (250, 8), (400, 5), (10**9, 2)])
def test_the_pieces_partition_the_row_groups(table_folder, piece_rows, pieces):
    plan = plan_pieces([table_folder], piece_rows)
    assert len(plan.pieces) == pieces and plan.rows == 1_500
    _, rows = _rows(plan, ["x"], 10**6)
    assert sorted(rows.get_column("x").to_list()) == list(range(1_500))  # each row once


@pytest.mark.parametrize(("min_pieces", "pieces"), [(1, 2), (6, 8), (15, 15), (100, 15)])
def test_pieces_follow_the_cluster_where_the_row_groups_allow(table_folder, min_pieces, pieces):
    """With piece_rows None, pieces of at most ceil(rows / min_pieces) rows (and at most
    DEFAULT_PIECE_ROWS): 1,500 rows in row groups of 100 give 2 pieces (one per file) to 15."""
    plan = plan_pieces([table_folder], None, min_pieces=min_pieces)
    assert len(plan.pieces) == pieces and plan.rows == 1_500


def test_a_piece_streams_batches_of_the_asked_rows(table_folder):
    """Row groups of 100 rows are joined into batches of 250 (the last shorter), columns as asked."""
    plan = plan_pieces([table_folder / "a.parquet"], 10**9)
    frames, rows = _rows(plan, ["y"], 250)
    assert [f.height for f in frames] == [250, 250, 250, 250] and rows.columns == ["y"]
    frames, _ = _rows(plan, ["y"], 80)
    assert [f.height for f in frames] == [80] * 12 + [40]


def test_a_piece_says_where_its_rows_are(table_folder):
    plan = plan_pieces([table_folder / "a.parquet"], 250)
    assert [describe_piece(p).split(" of ")[0] for p in plan.pieces] == [
        "row groups 0-1", "row groups 2-3", "row groups 4-5", "row groups 6-7", "row groups 8-9"]
    assert describe_piece(plan_pieces([table_folder / "b.parquet"], 1).pieces[4]).startswith("row group 4 of '")
    assert describe_piece(plan.pieces[0]).endswith("a.parquet'")


def test_hive_partition_columns_are_read(tmp_path):
    for year, values in ((2018, [1, 2, 3]), (2019, [4, 5])):
        (tmp_path / f"year={year}").mkdir()
        pl.DataFrame({"a": values}).write_parquet(tmp_path / f"year={year}" / "part.parquet")
    plan = plan_pieces([tmp_path])
    assert plan.polars_schema.names() == ["a", "year"]
    _, rows = _rows(plan, ["a", "year"], 100)
    assert sorted(rows.rows()) == [(1, 2018), (2, 2018), (3, 2018), (4, 2019), (5, 2019)]


def test_inputs_of_different_columns_are_refused_by_name(tmp_path):
    pl.DataFrame({"x": [1]}).write_parquet(tmp_path / "one.parquet")
    pl.DataFrame({"x": ["1"]}).write_parquet(tmp_path / "two.parquet")
    with pytest.raises(DataError, match=r"differ in their columns: '.*two.parquet' has \['x'\].*pass files of one table"):
        plan_pieces([tmp_path / "one.parquet", tmp_path / "two.parquet"])


def test_an_input_without_rows_and_a_bad_piece_size_are_refused(tmp_path):
    pl.DataFrame({"x": []}, schema={"x": pl.Int64}).write_parquet(tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="the input has no rows"):
        plan_pieces([tmp_path / "empty.parquet"])
    with pytest.raises(ParameterError, match="The 'piece_rows' parameter must be an int in \\[1, inf\\) or None. Got 0"):
        plan_pieces([tmp_path / "empty.parquet"], 0)
