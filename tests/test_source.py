"""Reading the sensitive input: every input kind, batches, the streaming exact-answers pass
(equal to the in-memory answers), its errors, and synthesis from a file or a LazyFrame."""

import logging
import sys

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import polars_rap
from polars_rap.io import source
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import encode
from polars_rap.privacy.inference import inference_requests
from polars_rap.kernels import get_backend
from polars_rap import PlannedStrategy, ProjectionConfig, WorkloadSize
from polars_rap.errors import DataError
from polars_rap.io.source import DataSource, default_batch_rows, exact_answers, scan_file
from polars_rap.workload.builders import build_workload

FAST = dict(strategy=PlannedStrategy(relaxed_rows=100, rounds={"CM": 2, "LT": 2, "MM": 1},
                                     workload=WorkloadSize(n_linear_thresholds=200, n_mixed_marginals=50),
                                     projection=ProjectionConfig(max_steps=5, max_doublings=1)),
            progress=False)


@pytest.fixture(scope="module")
def queries(domain):
    return build_workload(domain, np.random.default_rng(0), classes=("CM", "MM", "LT"),
                          n_linear_thresholds=2_000, n_mixed_marginals=500)


@pytest.fixture(scope="module")
def in_memory(task, domain, queries):
    """The exact answers of the whole CA table encoded at once."""
    encoded = encode(task.frame, domain)
    return get_backend("cpu").answers_exact(encoded.codes, encoded.numerics, queries)


@pytest.fixture(scope="module")
def files(task, tmp_path_factory):
    """The CA table written as Parquet (several row groups), CSV and IPC files."""
    folder = tmp_path_factory.mktemp("inputs")
    paths = {"parquet": folder / "ca.parquet", "csv": folder / "ca.csv", "arrow": folder / "ca.arrow",
             "ipc": folder / "ca.ipc", "feather": folder / "ca.feather"}
    task.frame.write_parquet(paths["parquet"], row_group_size=5_000)
    task.frame.write_csv(paths["csv"])
    for kind in ("arrow", "ipc", "feather"):
        task.frame.write_ipc(paths[kind])
    return paths


def _inputs(task, files):
    """Every kind of input ``synthesize`` accepts, holding the CA table."""
    kinds = {
        "DataFrame": task.frame,
        "LazyFrame": task.frame.lazy(),
        "LazyFrame query": pl.scan_parquet(files["parquet"]).select(task.frame.columns),
        "pyarrow Table": task.frame.to_arrow(),
        "str path": str(files["parquet"]),
    }
    kinds.update({f"{kind} path": path for kind, path in files.items()})
    return kinds


# --------------------------------------------------------------------------- input kinds
def test_every_input_kind_streams_the_same_rows(task, files):
    """Batches of every input kind, put back together, are the table, in order; a CSV only
    widens the integer dtypes (its types come from the domain: int bounds and categories
    read as Int64)."""
    for name, data in _inputs(task, files).items():
        data_source = DataSource.from_input(data, task.domain)
        assert list(data_source.schema) == task.frame.columns, name
        joined = pl.concat(list(data_source.batches(task.frame.columns, 4_999)))
        if name == "csv path":
            assert data_source.schema["AGEP"] == data_source.schema["JWMNP"] == pl.Int64
            assert data_source.schema["OCCP"] == pl.String
            assert data_source.schema["PINCP_gt_50000"] == pl.Boolean
            joined = joined.cast(task.frame.schema)
        assert joined.equals(task.frame), name


def _csv(path, values: list[str]) -> str:
    path.write_text("x,c\n" + "".join(f"{value},a\n" for value in values))
    return str(path)


def test_csv_types_come_from_the_declared_domain_never_from_the_rows(tmp_path):
    """Neighbouring CSV files, one 2 turned into 2.5: the schema (released with the output) is
    the same for both; a reader that infers types gave Int64 against Float64."""
    rows = [str(i % 7) for i in range(2_000)]
    neighbour = [*rows[:1_500], "2.5", *rows[1_501:]]
    paths = _csv(tmp_path / "a.csv", rows), _csv(tmp_path / "b.csv", neighbour)
    for domain, dtype in (({"x": (0.0, 10.0)}, pl.Float64), ({"x": "numeric"}, pl.Float64),
                          ({"x": [0, 1, 2, 3, 4, 5, 6]}, pl.Int64), (None, pl.String)):
        schemas = [DataSource.from_input(path, domain).schema for path in paths]
        assert schemas[0] == schemas[1] == pl.Schema({"x": dtype, "c": pl.String}), domain
    rows_read = pl.concat(DataSource.from_input(paths[1], {"x": (0.0, 10.0)}).batches(["x"], 300))
    assert rows_read["x"][1_500] == 2.5 and rows_read["x"].sum() == sum(map(float, neighbour))
    # Text by default: infer_domain asks the same thing of both files (categories of text).
    for path in paths:
        _, requests = inference_requests(DataSource.from_input(path).schema, None, True)
        assert [(r.name, r.kind) for r in requests] == [("x", "categorical"), ("c", "categorical")]


def test_a_csv_value_that_does_not_read_as_its_declared_type_names_column_and_fix(tmp_path):
    """Int bounds make an Int64 column: a 2.5 there is an error for the curator, raised when
    the rows are read, that names the column and how to declare it."""
    path = _csv(tmp_path / "b.csv", ["1", "2.5", "3"])
    data_source = DataSource.from_input(path, {"x": (0, 10)})
    assert data_source.schema["x"] == pl.Int64
    with pytest.raises(ValueError, match=r"failed in column 'x'.*declare the column to match its values"):
        list(data_source.batches(["x"], 10))
    boolean = DataSource.from_input(_csv(tmp_path / "c.csv", ["TRUE", "false", ""]), {"x": [False, True]})
    assert pl.concat(boolean.batches(["x"], 10))["x"].to_list() == [True, False, None]
    with pytest.raises(ValueError, match=r"failed in column 'x'"):
        list(DataSource.from_input(path, {"x": [False, True]}).batches(["x"], 10))


def test_pandas_input_is_accepted(task, queries, in_memory):
    """A pandas frame with Arrow dtypes round-trips; one with NumPy dtypes (integer columns
    with nulls become float NaN) still gives the same answers."""
    pd = pytest.importorskip("pandas")
    frame = task.frame.to_pandas(use_pyarrow_extension_array=True)
    assert isinstance(frame, pd.DataFrame)
    data_source = DataSource.from_input(frame)
    assert pl.concat(list(data_source.batches(task.frame.columns, 10_000))).equals(task.frame)
    data_source = DataSource.from_input(task.frame.to_pandas())
    assert data_source.schema["FER"] == pl.Float64
    domain = Domain.from_mapping(data_source.schema, task.domain, task.labels)
    answers, _ = exact_answers(data_source, domain, queries, get_backend("cpu"), batch_rows=9_000)
    np.testing.assert_array_equal(answers, in_memory)


def test_a_dataframe_is_neither_copied_nor_collected_again(task):
    data_source = DataSource.from_input(task.frame)
    assert data_source.frame is task.frame and data_source.lazy is None
    assert data_source.schema == task.frame.schema


def test_batches_are_bounded_non_empty_and_read_only_the_named_columns(task, files):
    for data in (task.frame, files["parquet"]):
        batches = list(DataSource.from_input(data).batches(["SEX", "AGEP"], 3_000))
        heights = [b.height for b in batches]
        assert sum(heights) == task.frame.height
        assert max(heights) <= 3_000 and min(heights) > 0
        assert len(batches) >= task.frame.height // 3_000
        assert all(b.columns == ["SEX", "AGEP"] for b in batches)


def test_schema_is_known_before_any_row_is_read(tmp_path):
    """``from_input`` runs no part of a lazy query (the schema is planned, not computed);
    reading batches does."""
    calls = []

    def record(batch: pl.Series) -> pl.Series:
        calls.append(batch.len())
        return batch

    lazy = pl.LazyFrame({"a": [1, 2, 3]}).select(pl.col("a").map_batches(record, return_dtype=pl.Int64))
    data_source = DataSource.from_input(lazy)
    assert data_source.schema == pl.Schema({"a": pl.Int64})
    assert data_source.frame is None and calls == []
    assert pl.concat(list(data_source.batches(["a"], 2)))["a"].to_list() == [1, 2, 3]
    assert sum(calls) == 3


# ---------------------------------------------------------------------- exact answers
@pytest.mark.parametrize("batch_rows", [None, 10_007, 34_424, 34_425, 1_000_000])
def test_streamed_answers_equal_the_in_memory_answers(task, domain, queries, in_memory, batch_rows):
    """Whatever the batch size (dividing n or not, n - 1, n, more than n), the streamed pass
    gives the in-memory answers bit for bit: counts are recovered exactly per batch."""
    answers, n_rows = exact_answers(DataSource.from_input(task.frame), domain, queries,
                                    get_backend("cpu"), batch_rows=batch_rows)
    assert n_rows == task.frame.height
    assert answers.dtype == np.float64 and answers.shape == (queries.n_queries,)
    np.testing.assert_array_equal(answers, in_memory)


def test_every_input_kind_gives_the_in_memory_answers(task, files, queries, in_memory):
    for name, data in _inputs(task, files).items():
        data_source = DataSource.from_input(data, task.domain)
        domain = Domain.from_mapping(data_source.schema, task.domain, task.labels)
        answers, n_rows = exact_answers(data_source, domain, queries, get_backend("cpu"),
                                        batch_rows=7_777)
        assert n_rows == task.frame.height, name
        np.testing.assert_array_equal(answers, in_memory, err_msg=name)


@pytest.mark.parametrize("batch_rows", [1, 2, 3, 7])
def test_tiny_batches_match_the_reference_kernel(task, domain, queries, batch_rows):
    """Batches of one row and other tiny sizes, with the plain NumPy reference backend (on
    every 40th group of the workload, all three classes, to keep it quick)."""
    queries = queries.take_groups(np.arange(0, queries.n_groups, 40))
    assert len(np.unique(queries.query_class)) == 3
    small = task.frame.sample(23, seed=5)
    encoded = encode(small, domain)
    reference = get_backend("reference")
    want = reference.answers_exact(encoded.codes, encoded.numerics, queries)
    for data in (small, small.lazy()):
        got, n_rows = exact_answers(DataSource.from_input(data), domain, queries, reference,
                                    batch_rows=batch_rows)
        assert n_rows == 23
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def test_default_batch_rows_shrinks_for_wide_domains(domain):
    assert default_batch_rows(domain) == source.MAX_BATCH_ROWS
    wide = Domain.from_mapping({f"x{i}": pl.Float64 for i in range(500)},
                               {f"x{i}": (0, 1) for i in range(500)})
    assert default_batch_rows(wide) == source.BATCH_BYTES // (8 * 500)


# ------------------------------------------------------------------------------- errors
def test_input_errors_name_the_accepted_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="no file at .*missing.parquet"):
        DataSource.from_input(tmp_path / "missing.parquet")
    (tmp_path / "data.xlsx").write_text("x")
    with pytest.raises(ValueError, match=r"cannot read .*data.xlsx.*\.parquet, \.csv or \.arrow/\.ipc"):
        DataSource.from_input(str(tmp_path / "data.xlsx"))
    for bad in ([1, 2, 3], {"a": [1]}, pa.array([1, 2])):
        with pytest.raises(TypeError, match="polars DataFrame/LazyFrame, a pyarrow Table, a pandas DataFrame"):
            DataSource.from_input(bad)


def test_empty_input_is_refused(task, domain, queries, tmp_path):
    path = tmp_path / "empty.parquet"
    task.frame.head(0).write_parquet(path)
    for data in (task.frame.head(0), task.frame.lazy().filter(pl.col("AGEP") < 0), path):
        with pytest.raises(ValueError, match="the input has no rows; differential privacy needs at least one"):
            exact_answers(DataSource.from_input(data), domain, queries, get_backend("cpu"))


def test_bad_batch_rows_and_missing_columns_are_refused_at_the_call(task):
    data_source = DataSource.from_input(task.frame.lazy())
    for bad in (0, -1, 2.5, True):
        with pytest.raises(ValueError, match=r"'batch_rows' parameter must be an int in \[1, inf\)"):
            data_source.batches(["SEX"], bad)
    with pytest.raises(ValueError, match=r"lacks columns the domain declares: \['nope'\]"):
        data_source.batches(["SEX", "nope"], 10)


def test_undeclared_category_in_a_later_batch_names_column_and_rows(task, domain, queries):
    bad = task.frame.head(30).with_columns(
        pl.when(pl.int_range(pl.len()) == 17).then(pl.lit("XXX")).otherwise(pl.col("OCCP")).alias("OCCP"))
    with pytest.raises(ValueError, match=r"'OCCP' holds 1 values outside.*'XXX'.*found in the batch of input rows 10 to 19"):
        exact_answers(DataSource.from_input(bad.lazy()), domain, queries, get_backend("cpu"),
                      batch_rows=10)


# --------------------------------------------------------------------------- clip counts
def test_clipped_values_are_logged_once_per_column_with_the_total(task, domain, queries, caplog):
    """Ages over the public bound, spread over many batches: one warning for AGEP with the
    total, none per batch."""
    frame = task.frame.head(1_000).with_columns(
        pl.when(pl.int_range(pl.len()) % 100 == 0).then(150).otherwise(pl.col("AGEP")).alias("AGEP"))
    with caplog.at_level(logging.WARNING):
        exact_answers(DataSource.from_input(frame), domain, queries, get_backend("cpu"),
                      batch_rows=64)
    clipped = [r.getMessage() for r in caplog.records if "clipped" in r.getMessage()]
    assert clipped == ["column 'AGEP': 10 values outside the domain's bounds [17, 99] (declared or privately inferred) "
                       "were clipped"]


def test_encode_adds_clip_counts_instead_of_logging(task, domain, caplog):
    frame = task.frame.head(50).with_columns(pl.lit(150, dtype=pl.Int32).alias("AGEP"))
    counts = {"AGEP": 5}
    with caplog.at_level(logging.WARNING):
        encode(frame, domain, clip_counts=counts)
    assert counts == {"AGEP": 55}
    assert "clipped" not in caplog.text


# ----------------------------------------------------------------------------- synthesis
@pytest.fixture(scope="module")
def small(task):
    return task.frame.sample(3_000, seed=2)


def _synthesize(data, task, **options):
    return polars_rap.synthesize(data, epsilon=1.0, delta=1e-7, domain=task.domain,
                                 labels=task.labels, seed=4, **FAST, **options)


def test_file_and_lazyframe_synthesize_like_the_dataframe(small, task, tmp_path, monkeypatch):
    """Same seed, same output from a DataFrame, a Parquet path and ``lf.dp.synthesize``,
    with the file and the LazyFrame read in many small batches."""
    want = _synthesize(small, task)
    path = tmp_path / "small.parquet"
    small.write_parquet(path, row_group_size=500)
    monkeypatch.setattr(source, "MAX_BATCH_ROWS", 1_024)
    from_path = _synthesize(path, task)
    from_lazy = small.lazy().dp.synthesize(epsilon=1.0, delta=1e-7, domain=task.domain,
                                           labels=task.labels, seed=4, **FAST)
    for got in (from_path, from_lazy):
        assert got.report.n_rows == small.height
        assert got.data.equals(want.data)
        assert got.report.measurements.equals(want.report.measurements)
        assert got.report.events == want.report.events


def test_synthesize_from_an_empty_file_is_refused(task, tmp_path):
    path = tmp_path / "empty.parquet"
    task.frame.head(0).write_parquet(path)
    with pytest.raises(ValueError, match="the input has no rows"):
        _synthesize(path, task)


def test_synthesize_reads_a_csv_with_its_declared_types(tmp_path):
    """End to end: synthesize on a CSV path types each column from the declared domain (an
    integer column declared with int bounds comes back Int64 from a file of plain text)."""
    frame = pl.DataFrame({"age": [23, 35, 47, 59] * 100, "sex": ["F", "M"] * 200})
    path = tmp_path / "people.csv"
    frame.write_csv(path)
    result = polars_rap.synthesize(path, epsilon=1.0, delta=1e-7, domain={"age": (18, 90), "sex": ["F", "M"]},
                                   labels=["sex"], seed=0, progress=False, strategy=PlannedStrategy(
                                       relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20}))
    assert result.data.schema == pl.Schema({"age": pl.Int64, "sex": pl.String})


def test_the_ray_engine_without_ray_names_the_extra(task, tmp_path, monkeypatch, capsys):
    """Without Ray installed (hidden here), engine='ray' is an ImportError naming the extra,
    from the library and, as a usage error (exit 2), from the command line; nothing is read."""
    from polars_rap.cli import commands as cli

    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails, find_spec finds nothing
    path = tmp_path / "ca.parquet"
    task.frame.head(100).write_parquet(path)
    with pytest.raises(ImportError, match=r"pip install 'polars-rap\[ray\]'"):
        polars_rap.synthesize(path, epsilon=1.0, delta=1e-9, domain=task.domain, engine="ray", **FAST)
    status = cli.main(["synthesize", str(path), "-o", str(tmp_path / "out.parquet"), "--epsilon", "1",
                       "--delta", "1e-9", "--engine", "ray", "--quiet"])
    assert status == 2 and "pip install 'polars-rap[ray]'" in capsys.readouterr().err


def test_add_counts_is_exact_in_int64_and_refuses_overflow_and_impossible_counts():
    """Partial counts add exactly (no float rounding even past 2**53), a total past 2**63 - 1
    rows is refused before it could wrap, and a batch's count outside [0, its rows] (a row
    counted twice) is an error, never a wrong answer."""
    total = np.array([2**53, 0], dtype=np.int64)
    n_rows = source.add_counts(total, 2**53, np.array([1, 1], dtype=np.int64), 1)
    assert n_rows == 2**53 + 1 and total.tolist() == [2**53 + 1, 1]
    with pytest.raises(OverflowError, match="int64 counts would overflow"):
        source.add_counts(total, 2**63 - 5, np.array([1, 1], dtype=np.int64), 10)
    for bad in (np.array([3, 0], dtype=np.int64), np.array([-1, 0], dtype=np.int64), np.array([1.0, 0.0])):
        with pytest.raises(RuntimeError, match="outside"):
            source.add_counts(total, 0, bad, 2)
    assert total.tolist() == [2**53 + 1, 1]  # a refused batch adds nothing


# ------------------------------------------------------------------ several files at once
def _parts(frame: pl.DataFrame, folder, write, suffix: str, n: int = 3) -> list:
    """``frame`` written as ``n`` consecutive parts ``folder/part-<i>.<suffix>``."""
    folder.mkdir(parents=True, exist_ok=True)
    size = -(-frame.height // n)
    paths = []
    for i in range(n):
        paths.append(folder / f"part-{i}.{suffix}")
        write(frame.slice(i * size, size), paths[-1])
    return paths


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "csv"])
def test_a_pattern_or_a_directory_reads_its_parts_as_one_table(task, suffix, tmp_path):
    """A glob pattern and a directory (subfolders included, ``_SUCCESS`` and hidden files
    skipped) read the parts in path order, as the whole table."""
    frame = task.frame.head(3_000)
    write = {"parquet": pl.DataFrame.write_parquet, "arrow": pl.DataFrame.write_ipc,
             "csv": pl.DataFrame.write_csv}[suffix]
    _parts(frame.head(2_000), tmp_path / "table", write, suffix, n=2)
    _parts(frame.tail(1_000), tmp_path / "table" / "z", write, suffix, n=1)  # sorts after part-1
    (tmp_path / "table" / "_SUCCESS").write_text("")
    (tmp_path / "table" / ".part-0.crc").write_text("x")
    mapping = dict(task.domain)
    for given in (tmp_path / "table", str(tmp_path / "table" / "**" / f"*.{suffix}")):
        read = scan_file(given, mapping).collect()
        assert read.height == 3_000
        expected = frame if suffix != "csv" else scan_file(_parts(frame, tmp_path / "one", write, suffix, 1)[0],
                                                           mapping).collect()
        assert read.equals(expected)
    assert [p.name for p in source.input_files(tmp_path / "table")] == ["part-0." + suffix, "part-1." + suffix,
                                                                       "part-0." + suffix]


def test_parts_with_other_columns_or_formats_are_named(task, tmp_path):
    frame = task.frame.head(100)
    frame.write_parquet(tmp_path / "a.parquet")
    frame.with_columns(pl.col("AGEP").cast(pl.Float64)).write_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"'.*b.parquet' does not have the columns of .*a.parquet.*AGEP: "
                                        r"Int32 against Float64"):
        scan_file(tmp_path / "*.parquet")
    frame.drop("SEX").write_parquet(tmp_path / "b.parquet")
    with pytest.raises(DataError, match=r"it lacks \['SEX'\]"):
        scan_file(tmp_path)
    frame.write_csv(tmp_path / "b.csv")
    with pytest.raises(ValueError, match="holds files of several formats \\(csv, parquet\\)"):
        DataSource.from_input(str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no file matches the pattern .*nothing-\\*.parquet"):
        DataSource.from_input(str(tmp_path / "nothing-*.parquet"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no .parquet, .csv or .arrow/.ipc file in the directory"):
        DataSource.from_input(tmp_path / "empty")


def test_synthesize_reads_a_partitioned_table(small, task, tmp_path):
    """The parts of a table give the run of the whole table: the same rows in the same order,
    so the same release."""
    _parts(small, tmp_path / "parts", pl.DataFrame.write_parquet, "parquet")
    want = _synthesize(small, task)
    for given in (tmp_path / "parts", str(tmp_path / "parts" / "part-*.parquet")):
        got = _synthesize(given, task)
        assert got.report.n_rows == small.height
        assert got.data.equals(want.data)
        assert got.report.measurements.equals(want.report.measurements)
