"""Saved models: exact round trip, only released values on disk, sampling, refusals."""

import dataclasses
import json

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

import polars_rap
from polars_rap.io import datasets
from polars_rap.pipeline.model import FORMAT_VERSION, SyntheticModel, coordinate_names
from polars_rap import PlannedStrategy, ProjectionConfig, WorkloadSize
from polars_rap.privacy.report import PrivacyReport

FAST = dict(strategy=PlannedStrategy(relaxed_rows=100, rounds={"CM": 2, "LT": 2, "MM": 1},
                                     workload=WorkloadSize(n_linear_thresholds=200, n_mixed_marginals=50),
                                     projection=ProjectionConfig(max_steps=5)),
            progress=False)
REPORT_TABLES = ["report_events.parquet", "report_measurements.parquet", "report_unmeasured.parquet"]
MODEL_FILES = {"manifest.json", "relaxed.arrow", "domain.arrow", "report.json", "histogram_margins.arrow",
               *REPORT_TABLES}
"""A default model's files: its numerics have histograms, so it keeps their margins (HISTOGRAM_MATCH);
on 2,000 rows its numeric pair's ranks would cost more than rank_share allows, so they are not measured."""


@pytest.fixture(scope="module")
def small():
    return datasets.load_task("acs-income-CA").frame.sample(2000, seed=2)


@pytest.fixture(scope="module")
def result(small):
    task = datasets.load_task("acs-income-CA")
    return polars_rap.synthesize(small, epsilon=1.0, delta=1e-7, domain=task.domain,
                                 labels=task.labels, seed=0, **FAST)


@pytest.fixture()
def saved(result, tmp_path):
    return result.save(tmp_path / "model")


def test_round_trip_keeps_relaxed_bits_domain_and_report(result, saved):
    model = polars_rap.load(saved)
    assert model.relaxed.dtype == np.float32
    assert np.array_equal(model.relaxed.view(np.uint32), result.relaxed.view(np.uint32))
    assert model.domain == result.domain
    assert model.report.to_dict() == result.report.to_dict()
    for field in dataclasses.fields(PrivacyReport):
        value = getattr(result.report, field.name)
        if isinstance(value, pl.DataFrame):
            assert getattr(model.report, field.name).equals(value), field.name
            assert getattr(model.report, field.name).schema == value.schema, field.name
    assert model.report.events == result.report.events
    assert model.format_version == FORMAT_VERSION


def test_saved_directory_holds_only_the_released_values(result, saved):
    """The files hold the relaxed data, the public domain and the report: nothing else."""
    assert {p.name for p in saved.iterdir()} == MODEL_FILES
    manifest = json.loads((saved / "manifest.json").read_text())
    assert set(manifest) == {"format", "format_version", "library", "library_version",
                             "created_utc", "relaxed_shape", "public_data", "files"}
    assert manifest["public_data"] is None  # no public table shaped this model
    assert {f["name"] for f in manifest["files"]} == MODEL_FILES - {"manifest.json"}
    relaxed = pa.ipc.open_file(saved / "relaxed.arrow").read_all()
    assert relaxed.column_names == coordinate_names(result.domain)
    assert relaxed.num_rows == FAST["strategy"].relaxed_rows and relaxed.schema.metadata is None
    assert {c.type for c in relaxed.columns} == {pa.float32()}
    domain = pa.ipc.open_file(saved / "domain.arrow").read_all()
    assert domain.num_rows == 0 and domain.schema == result.domain.to_arrow_schema()
    assert json.loads((saved / "report.json").read_text()) == json.loads(result.report.to_json(full=False))
    assert pl.read_parquet(saved / "report_measurements.parquet").equals(result.report.measurements)
    assert pl.read_parquet(saved / "report_unmeasured.parquet").equals(result.report.unmeasured)
    events = pl.read_parquet(saved / "report_events.parquet")
    assert events.height == len(result.report.events) and events.columns == [
        "mechanism", "rho", "description", "round", "delta"]


def test_the_saved_report_is_a_small_summary_and_compressed_tables(result, saved):
    """The full report as JSON grows with the workload; the saved files are a fraction of it."""
    summary = json.loads((saved / "report.json").read_text())
    assert summary["rho_spent"] == result.report.rho_spent and summary["n_rows"] == 2000
    assert {row["query_class"] for row in summary["measured_by_class"]} == {"BM", "CM", "MM", "LT", "NH"}
    assert sum(row["count"] for row in summary["charges"]) == len(result.report.events)
    saved_bytes = sum((saved / name).stat().st_size for name in ["report.json", *REPORT_TABLES])
    assert saved_bytes < len(result.report.to_json(indent=None)) / 3
    assert (saved / "report.json").stat().st_size < 8_000


def test_a_format_1_model_still_loads(result, saved):
    """Before issue 16 the whole report was one JSON file; such models load unchanged."""
    import hashlib

    for name in REPORT_TABLES:
        (saved / name).unlink()
    data = result.report.to_json(indent=None).encode()
    (saved / "report.json").write_bytes(data)
    manifest = json.loads((saved / "manifest.json").read_text())
    files = [f for f in manifest["files"] if f["name"] in ("relaxed.arrow", "domain.arrow")]
    files.append({"name": "report.json", "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    _edit_manifest(saved, format_version=1, files=files)
    model = polars_rap.load(saved)
    assert model.format_version == 1 and model.report.to_dict() == result.report.to_dict()


def test_sample_is_reproducible_by_seed_and_has_the_input_schema(result, small):
    model = result.model
    first = model.sample(3000, seed=5)
    assert first.schema == small.schema and first.height == 3000
    assert first.equals(model.sample(3000, seed=5))
    assert not first.equals(model.sample(3000, seed=6))


def test_loaded_model_samples_like_the_result_model(result, saved):
    assert polars_rap.load(saved).sample(500, seed=1).equals(result.model.sample(500, seed=1))


@pytest.mark.parametrize("rows", [0, -3, 2.5, True, "10", None])
def test_sample_refuses_rows_that_are_not_a_positive_int(result, rows):
    with pytest.raises(ValueError, match="'rows' parameter must be an int in \\[1, inf\\)"):
        result.model.sample(rows)


def test_model_refuses_a_relaxed_matrix_that_does_not_fit_the_domain(result):
    with pytest.raises(ValueError, match=f"float32\\[n_relaxed >= 1, {result.domain.n_coords}\\]"):
        SyntheticModel(result.relaxed[:, :-1], result.domain, result.report)


def _edit_manifest(directory, **changes):
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest.update(changes)
    path.write_text(json.dumps(manifest))


def test_load_refuses_a_newer_format_version_and_says_to_upgrade(saved):
    _edit_manifest(saved, format_version=FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match=f"format version {FORMAT_VERSION + 1}.*Upgrade polars-rap"):
        polars_rap.load(saved)


def test_the_rank_pairs_round_trip_and_a_version_8_model_without_them_still_loads(tmp_path):
    """On 20,000 rows without the ties the numeric pair's ranks are measured: the saved model holds
    ``rank_pairs.arrow``, whose pairs load equal and decode the same rows; a model of format 8
    (before the numeric pairs' ranks: no such file) loads without them and samples."""
    task = datasets.load_task("acs-income-CA")
    strategy = dataclasses.replace(FAST["strategy"], tie_share=0.0)  # the pairs are measured where the ties are not
    result = polars_rap.synthesize(task.frame.sample(20_000, seed=3), epsilon=1.0, delta=1e-9, domain=task.domain,
                                   labels=task.labels, seed=0, strategy=strategy, progress=False)
    saved = result.save(tmp_path / "model")
    assert {p.name for p in saved.iterdir()} == MODEL_FILES | {"rank_pairs.arrow"}
    model = polars_rap.load(saved)
    assert result.rank_pairs is not None and model.rank_pairs is not None
    assert np.array_equal(model.rank_pairs.scores, result.rank_pairs.scores)
    assert np.array_equal(model.rank_pairs.released, result.rank_pairs.released)
    assert model.sample(3_000, seed=4).equals(result.model.sample(3_000, seed=4))
    (saved / "rank_pairs.arrow").unlink()
    manifest = json.loads((saved / "manifest.json").read_text())
    _edit_manifest(saved, format_version=8, files=[f for f in manifest["files"] if f["name"] != "rank_pairs.arrow"])
    older = polars_rap.load(saved)
    assert older.rank_pairs is None and older.format_version == 8
    assert older.sample(500, seed=1).schema == result.data.schema


@pytest.mark.parametrize("changes, message", [
    ({"format": "something-else"}, "not a polars-rap model"),
    ({"format_version": "one"}, "unknown format_version"),
    ({"format_version": 0}, "unknown format_version"),
    ({"files": None}, "no 'files' list"),
])
def test_load_refuses_an_unknown_format(saved, changes, message):
    _edit_manifest(saved, **changes)
    with pytest.raises(ValueError, match=message):
        polars_rap.load(saved)


@pytest.mark.parametrize("name", ["relaxed.arrow", "domain.arrow", "report.json", "manifest.json", *REPORT_TABLES])
def test_load_names_a_missing_file(saved, name):
    (saved / name).unlink()
    with pytest.raises(FileNotFoundError, match=name.replace(".", "\\.")):
        polars_rap.load(saved)


@pytest.mark.parametrize("name", ["relaxed.arrow", "domain.arrow", "report.json", "manifest.json", *REPORT_TABLES])
def test_load_names_a_corrupt_file(saved, name):
    path = saved / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=name.replace(".", "\\.") + ".*corrupt"):
        polars_rap.load(saved)


def test_load_refuses_a_path_that_is_not_a_directory(tmp_path):
    with pytest.raises(FileNotFoundError, match="no saved model"):
        polars_rap.load(tmp_path / "absent")


def test_save_refuses_a_non_empty_directory_unless_overwrite(result, saved):
    with pytest.raises(FileExistsError, match="not empty.*overwrite=True"):
        result.save(saved)
    result.save(saved, overwrite=True)
    assert {p.name for p in saved.iterdir()} == MODEL_FILES
    polars_rap.load(saved)


def test_overwrite_never_deletes_files_the_library_did_not_write(result, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="not part of a saved model.*notes.txt"):
        result.save(tmp_path, overwrite=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(FileExistsError, match="it is a file"):
        result.save(tmp_path / "notes.txt", overwrite=True)


def test_report_from_dict_round_trips_empty_frames_through_json(result):
    """An empty DataFrame field keeps its columns and dtypes; events keep every field."""
    frames = {f.name: getattr(result.report, f.name).clear() for f in dataclasses.fields(PrivacyReport)
              if isinstance(getattr(result.report, f.name), pl.DataFrame)}
    empty = dataclasses.replace(result.report, events=(), **frames)
    back = PrivacyReport.from_dict(json.loads(empty.to_json()))
    for name, frame in frames.items():
        assert getattr(back, name).schema == frame.schema and getattr(back, name).height == 0
    assert back.events == () and back.to_dict() == empty.to_dict()


def test_report_from_dict_names_unknown_and_missing_keys(result):
    data = result.report.to_dict()
    with pytest.raises(ValueError, match="unknown keys \\['surprise'\\]"):
        PrivacyReport.from_dict({**data, "surprise": 1})
    del data["epsilon"]
    with pytest.raises(ValueError, match="lacks the key 'epsilon'"):
        PrivacyReport.from_dict(data)


def test_report_files_round_trip_empty_tables(result):
    """A report with no charge and no rows keeps its tables' columns and dtypes on disk."""
    from polars_rap.privacy.report_files import report_files, report_from_files

    frames = {f.name: getattr(result.report, f.name).clear() for f in dataclasses.fields(PrivacyReport)
              if isinstance(getattr(result.report, f.name), pl.DataFrame)}
    empty = dataclasses.replace(result.report, events=(), **frames)
    back = report_from_files(report_files(empty))
    for name, frame in frames.items():
        assert getattr(back, name).schema == frame.schema and getattr(back, name).height == 0
    assert back.events == () and back.to_dict() == empty.to_dict()
