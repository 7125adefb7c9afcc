"""Histogram margins (polars_rap.decode.histogram_margins, ``HISTOGRAM_MATCH``): the
move toward a released histogram against a NumPy count, the band, ranks and nulls kept, the
margins read from a run's record, and saved models that decode as the run did."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.schema.domain import Domain
from polars_rap.errors import DataError
from polars_rap.decode.histogram_margins import HISTOGRAM_MATCH, HistogramMargins, monotone
from polars_rap.pipeline import decoding as decoding_stage
from polars_rap.pipeline.model import FORMAT_VERSION, SyntheticModel
from polars_rap.schema.transforms import from_unit, to_unit

MAPPING = {"y": ["n", "p"], "k": {"bounds": (1, 10), "integer": True, "nullable": True}}


def _domain() -> Domain:
    return Domain.from_mapping({"y": pl.String, "k": pl.Int64}, MAPPING, ["y"])


def _margins(prefixes: np.ndarray, band: float, stds: float = 1e-3) -> HistogramMargins:
    """Histogram of ``k`` (one cell per whole value 1..10) x ``y``: ``prefixes`` float[10, 2]."""
    spec = _domain()["k"]
    edges = np.append(to_unit(np.arange(1, 10) + 0.5, spec), 1.0)
    return HistogramMargins(band, (0,), (_domain().block_index("y"),), (edges,), (np.asarray(prefixes, float),),
                            (np.full(10, stds),))


def _rows(n: int = 4000, seed: int = 0):
    """codes int32[n, 2] (y, k's null indicator) and numerics float64[n, 1] (k mapped), every
    non-null k at 3 or 7, 10% nulls."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    null = rng.random(n) < 0.1
    k = np.where(rng.random(n) < 0.5, 3.0, 7.0)
    numerics = to_unit(k, _domain()["k"])[:, None]
    return np.column_stack([y, null.astype(int)]).astype(np.int32), numerics


def _values(codes, numerics, label: int) -> np.ndarray:
    rows = (codes[:, 0] == label) & (codes[:, 1] == 0)
    return np.rint(from_unit(numerics[rows, 0], _domain()["k"]))


def test_at_band_zero_each_label_s_values_take_the_histogram_s_distribution() -> None:
    """Band 0: the non-null rows of each label get the released cells' shares (the prefixes less
    that label's null share), to one row per cell; null rows and the other label's are kept."""
    codes, numerics = _rows()
    n = len(codes)
    null_share = [np.count_nonzero((codes[:, 0] == c) & (codes[:, 1] == 1)) / n for c in (0, 1)]
    cells = np.array([[0.05, 0.1, 0.1, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.05]] * 2).T  # of each label's non-null
    mass = [np.count_nonzero((codes[:, 0] == c) & (codes[:, 1] == 0)) / n for c in (0, 1)]
    prefixes = np.cumsum(cells, axis=0) * np.array(mass) + np.array(null_share)
    moved = _margins(prefixes, 0.0).apply(codes, numerics, _domain(), np.random.default_rng(1))
    for label in (0, 1):
        got = np.bincount(_values(codes, moved, label).astype(int), minlength=11)[1:]
        expected = cells[:, label] * np.count_nonzero((codes[:, 0] == label) & (codes[:, 1] == 0))
        assert np.abs(got - expected).max() <= 1.0
    null = codes[:, 1] == 1
    np.testing.assert_array_equal(moved[null], numerics[null])


def test_a_wide_band_keeps_every_row_s_cell_and_ranks_are_kept() -> None:
    """Within Z noise stds of the histogram the rows' own distribution is kept: with stds of 1
    every row keeps its cell (here its whole value); at band 0 a row's cell among its label's
    non-null rows never drops below that of a row it was above."""
    codes, numerics = _rows()
    prefixes = np.tile(np.linspace(0.05, 0.5, 10)[:, None], (1, 2))
    unchanged = _margins(prefixes, 2.0, stds=1.0).apply(codes, numerics, _domain(), np.random.default_rng(2))
    for label in (0, 1):
        np.testing.assert_array_equal(_values(codes, unchanged, label), _values(codes, numerics, label))
    null = codes[:, 1] == 1
    np.testing.assert_array_equal(unchanged[null], numerics[null])
    moved = _margins(prefixes, 0.0).apply(codes, numerics, _domain(), np.random.default_rng(2))
    before, after = _values(codes, numerics, 0), _values(codes, moved, 0)
    assert after[before == 7].min() >= after[before == 3].max()
    assert set(np.unique(after)) == set(range(2, 11))  # the first cell holds the nulls' share alone


def test_within_a_cell_values_are_uniform_whatever_their_relaxed_positions() -> None:
    """The relaxed rows' positions inside a cell are not released (the histogram says how many
    rows a cell holds, not where in it): a cell's values are drawn uniformly over it, so one
    label's rows heaped at its low end and the other's at its high end come out alike and
    uniform (KS at 1%), each row still in its cell."""
    from scipy import stats

    domain = Domain.from_mapping({"y": pl.String, "x": pl.Float64}, {"y": ["n", "p"], "x": (0.0, 1.0)}, ["y"])
    edges = np.array([0.5, 1.0])  # two cells of x (mapped linearly: u = x)
    margins = HistogramMargins(2.0, (0,), (domain.block_index("y"),), (edges,),
                               (np.array([[0.25, 0.25], [0.5, 0.5]]),), (np.full(2, 1.0),))
    rng = np.random.default_rng(3)
    n = 8_000
    label = np.repeat([0, 1], n // 2)
    cell = rng.integers(0, 2, n)  # a row's cell, kept
    within = np.where(label == 0, 0.05, 0.95) + rng.normal(0.0, 0.01, n).clip(-0.04, 0.04)
    numerics = ((cell + within) / 2)[:, None]
    codes = label[:, None].astype(np.int32)
    moved = margins.apply(codes, numerics, domain, rng)[:, 0]
    np.testing.assert_array_equal(moved > 0.5, numerics[:, 0] > 0.5)
    for k in (0, 1):
        for y in (0, 1):
            inside = (moved[(cell == k) & (label == y)] - k / 2) * 2
            assert stats.kstest(inside, "uniform").pvalue > 0.01


def test_monotone_pools_adjacent_violators() -> None:
    values = np.array([0.2, 0.1, 0.3, 0.5, 0.4, 0.4, 0.9])
    fitted = monotone(values)
    assert np.all(np.diff(fitted) >= 0) and fitted.sum() == pytest.approx(values.sum())
    np.testing.assert_allclose(fitted, [0.15, 0.15, 0.3, 13 / 30, 13 / 30, 13 / 30, 0.9])


def test_the_band_is_one_noise_std() -> None:
    assert HISTOGRAM_MATCH == 1.0  # the default since ablation_histogram_match


def _frame(n: int = 600, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    k = pl.Series("k", rng.choice([2, 5, 5, 5, 9], n)).set(pl.Series(rng.random(n) < 0.2), None)
    return pl.DataFrame({"y": rng.choice(["n", "p"], n), "k": k})


LOOP = dict(relaxed_rows=30, rounds={"LT": 2}, workload={"n_linear_thresholds": 20})  # the strategy's loop settings
RUN = dict(epsilon=2.0, delta=1e-6, domain=MAPPING, labels=["y"], strategy=polars_rap.PlannedStrategy(**LOOP),
           seed=0, progress=False)


def _plain(frame, monkeypatch):
    """The run of ``frame`` decoded without its histograms' margins (as a release without
    histograms decodes)."""
    with monkeypatch.context() as patch:
        patch.setattr(decoding_stage, "histogram_margins", lambda *args: None)
        return polars_rap.synthesize(frame, **RUN)


def test_a_run_reads_its_released_histograms_and_its_model_decodes_as_it_did(tmp_path, monkeypatch) -> None:
    """The margins are the run's NH prefixes as reported (edges, values, stds), decoding
    without them releases the same rows' ledger and relaxed data (post-processing), and a saved
    model keeps the margins and samples the rows a model in memory samples (band 0 here: the
    histograms' own distribution)."""
    frame = _frame()
    plain = _plain(frame, monkeypatch)
    monkeypatch.setattr(decoding_stage, "HISTOGRAM_MATCH", 0.0)
    matched = polars_rap.synthesize(frame, **RUN)
    assert plain.histogram_margins is None and matched.histogram_margins is not None
    np.testing.assert_array_equal(matched.relaxed, plain.relaxed)  # post-processing: the release is the same
    assert [(e.description, e.rho.hex()) for e in matched.report.events] == [
        (e.description, e.rho.hex()) for e in plain.report.events]
    margins = matched.histogram_margins
    reported = matched.report.measurements.filter(pl.col("query_class") == "NH").sort("query")
    assert margins.columns == (0,) and margins.prefixes[0].shape == (10, 2)
    np.testing.assert_array_equal(margins.prefixes[0].ravel(), reported["noisy_answer"].to_numpy())
    np.testing.assert_array_equal(np.repeat(margins.stds[0], 2), reported["noise_std"].to_numpy())
    loaded = SyntheticModel.load(matched.model.save(tmp_path / "model"))
    assert loaded.format_version == FORMAT_VERSION
    np.testing.assert_array_equal(loaded.histogram_margins.prefixes[0], margins.prefixes[0])
    np.testing.assert_array_equal(loaded.histogram_margins.edges[0], margins.edges[0])
    assert loaded.sample(2_000, seed=3).equals(matched.model.sample(2_000, seed=3))
    assert not loaded.sample(2_000, seed=3).equals(plain.model.sample(2_000, seed=3))
    files = loaded.write_parquet(tmp_path / "out", 2_000, seed=4, block_rows=1_000)
    assert pl.read_parquet(files).height == 2_000
    plain.model.save(tmp_path / "model", overwrite=True)  # an overwritten model loses its margins file
    assert not (tmp_path / "model" / "histogram_margins.arrow").exists()
    assert SyntheticModel.load(tmp_path / "model").histogram_margins is None


def test_a_damaged_margins_file_is_refused_by_name(tmp_path) -> None:
    matched = polars_rap.synthesize(_frame(), **RUN)
    path = matched.model.save(tmp_path / "model")
    (path / "histogram_margins.arrow").write_bytes(b"not arrow")
    with pytest.raises(DataError, match="histogram_margins.arrow"):
        SyntheticModel.load(path)


def test_a_version_4_model_loads_without_margins(tmp_path, monkeypatch) -> None:
    """Models saved before the margins (format 4) still load, and sample as they did."""
    plain = _plain(_frame(), monkeypatch)
    path = plain.model.save(tmp_path / "model")
    manifest = json.loads((path / "manifest.json").read_text())
    (path / "manifest.json").write_text(json.dumps({**manifest, "format_version": 4}))
    loaded = SyntheticModel.load(path)
    assert loaded.format_version == 4 and loaded.histogram_margins is None
    assert loaded.sample(500, seed=1).equals(plain.model.sample(500, seed=1))
