"""Numeric coupling at decoding (polars_rap.decode.numeric_coupling): "label" permutes each numeric
column within each label value, keeps every per-label distribution, null pattern and category."""

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.io.blocks import sample_block
from polars_rap.schema.domain import Domain
from polars_rap.decode.decoding import decode
from polars_rap.errors import ParameterError
from polars_rap.pipeline.model import SyntheticModel
from polars_rap.fit.strategy_checks import check_numeric_coupling
from polars_rap.decode.numeric_coupling import decouple_numerics
from polars_rap.public.labels import LabelModel, _n_features
from polars_rap.fit.strategy import PaperStrategy, PlannedStrategy

SCHEMA = {"y": pl.String, "z": pl.String, "a": pl.Float64, "b": pl.Int64}
DECLARED = {"y": ["n", "p", "q"], "z": ["u", "v"], "a": (0.0, 1.0), "b": {"bounds": (0, 50), "nullable": True}}


def _domain(labels=("y", "z")) -> Domain:
    return Domain.from_mapping(SCHEMA, DECLARED, list(labels))


def _sample(domain: Domain, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    codes = np.column_stack([rng.integers(0, size, n) for size in domain.block_sizes]).astype(np.int32)
    return codes, rng.random((n, len(domain.numeric_columns)))


def _groups(domain: Domain, codes: np.ndarray, column: int) -> np.ndarray:
    """Each row's (labels, null) group for numeric column ``column``."""
    labels = [i for i, block in enumerate(domain.blocks) if block.is_label]
    spec = domain.numeric_columns[column]
    null = codes[:, domain.block_index(spec.name, indicator=True)] if spec.nullable else np.zeros(len(codes))
    return np.column_stack([codes[:, labels], null])


@pytest.mark.parametrize("labels", [("y",), ("y", "z")])
def test_each_column_is_permuted_within_its_labels_and_null_state(labels):
    domain = _domain(labels)
    codes, numerics = _sample(domain, 3_000, np.random.default_rng(0))
    out = decouple_numerics(codes, numerics, domain, np.random.default_rng(1))
    assert out.shape == numerics.shape and out is not numerics
    for j in range(numerics.shape[1]):
        groups = _groups(domain, codes, j)
        for key in np.unique(groups, axis=0):
            rows = np.all(groups == key, axis=1)
            np.testing.assert_array_equal(np.sort(out[rows, j]), np.sort(numerics[rows, j]))
        assert np.mean(out[:, j] == numerics[:, j]) < 0.05  # moved, not left in place
    # each column by its own permutation: the pairs of one row rarely stay together
    assert np.mean(np.all(out == numerics, axis=1)) < 0.01


def test_the_columns_come_out_independent_given_the_label():
    """Two numerics perfectly dependent within each label come out uncorrelated."""
    domain = Domain.from_mapping({"y": pl.String, "a": pl.Float64, "c": pl.Float64},
                                 {"y": ["n", "p"], "a": (0.0, 1.0), "c": (0.0, 1.0)}, ["y"])
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 2, (20_000, 1)).astype(np.int32)
    a = rng.random(20_000)
    out = decouple_numerics(codes, np.column_stack([a, a]), domain, rng)
    for label in (0, 1):
        rows = codes[:, 0] == label
        assert abs(np.corrcoef(out[rows, 0], out[rows, 1])[0, 1]) < 0.03


def test_without_labels_or_numerics_nothing_moves():
    rng = np.random.default_rng(3)
    domain = _domain(labels=())
    codes, numerics = _sample(domain, 100, rng)
    assert decouple_numerics(codes, numerics, domain, rng) is numerics
    categorical = Domain.from_mapping({"y": pl.String}, {"y": ["n", "p"]}, ["y"])
    empty = np.zeros((5, 0))
    assert decouple_numerics(np.zeros((5, 1), dtype=np.int32), empty, categorical, rng) is empty


def test_after_a_label_redraw_each_label_draws_from_the_rows_that_held_it_before():
    """Label 0's values lie in [0, 0.5), label 1's in [0.5, 1); a third of the labels flip. Each
    row then gets values of its new label's pool (the rows of that label before the flip),
    nulls stay, and a group whose pool is empty keeps its own values."""
    domain = _domain(labels=("y",))
    rng = np.random.default_rng(9)
    codes, _ = _sample(domain, 6_000, rng)
    codes[:, 0] = rng.integers(0, 2, 6_000)  # labels n and p only: q has no rows before
    before = codes.copy()
    numerics = (rng.random((6_000, 2)) + codes[:, [0]]) / 2
    after = codes.copy()
    flip = rng.random(6_000) < 1 / 3
    after[flip, 0] = 1 - after[flip, 0]
    after[:10, 0] = 2  # ten rows to q, which no row held before
    out = decouple_numerics(after, numerics, domain, rng, pool_codes=before)
    np.testing.assert_array_equal(out[:10], numerics[:10])
    null = after[:, domain.block_index("b", indicator=True)] == 1
    cases = [(label, 0, None) for label in (0, 1)] + [(label, 1, state) for label in (0, 1) for state in (0, 1)]
    for label, j, state in cases:
        same = np.ones(6_000, dtype=bool) if state is None else null == state
        rows = (after[:, 0] == label) & same
        rows[:10] = False
        pool = (before[:, 0] == label) & same  # a null b's value is drawn among null rows: it stays null
        assert np.isin(out[rows, j], numerics[pool, j]).all()
        assert np.all((out[rows, j] >= label / 2) & (out[rows, j] < (label + 1) / 2))
        # without replacement while the pool lasts: as many distinct values as the smaller side
        assert len(np.unique(out[rows, j])) >= min(rows.sum(), pool.sum()) - 1


def test_decode_with_a_label_model_keeps_each_labels_numerics_where_the_measurements_win():
    """A model that labels every row "p", the "n" rows decoded with a = 0.1 and the "p" rows with
    0.9. Redrawing a share of the rows (the measurements win), every "p" row then holds a value
    the "p" rows held as decoded, and every "n" row one of the "n" rows'; redrawing all of them
    (the model wins), the numerics stay with their rows and follow the new labels."""
    domain = Domain.from_mapping({"y": pl.String, "a": pl.Float64}, {"y": ["n", "p"], "a": (0.0, 1.0)}, ["y"])
    relaxed = np.array([[1.0, 0.0, 0.1]] * 5 + [[0.0, 1.0, 0.9]] * 5, dtype=np.float32)
    coefficients = np.zeros((_n_features(domain, 0), 2))
    coefficients[0, 1] = 50.0
    for share in (0.5, 1.0):
        model = LabelModel(("y",), (coefficients,), 0.1, share=share)
        out = decode(relaxed, domain, 1_000, np.random.default_rng(10), method="controlled", labels=model,
                     numeric_coupling="label")
        is_p = (out["y"] == "p").to_numpy()
        a = out["a"].to_numpy()
        if share < 1.0:
            assert 0.6 < is_p.mean() < 0.9  # a part of the "n" rows turned
            np.testing.assert_allclose(a[is_p], 0.9, atol=1e-6)
            np.testing.assert_allclose(a[~is_p], 0.1, atol=1e-6)
        else:
            assert is_p.all() and np.isclose(a, 0.1, atol=1e-6).mean() == 0.5


def test_decode_with_label_coupling_changes_only_the_pairing():
    """Same seed: the same categories and nulls, the same numeric values within each
    (labels, null) group, another pairing."""
    domain = _domain()
    rng = np.random.default_rng(4)
    relaxed = rng.random((50, domain.n_coords)).astype(np.float32)
    fitted = decode(relaxed, domain, 5_000, np.random.default_rng(5), method="controlled")
    label = decode(relaxed, domain, 5_000, np.random.default_rng(5), method="controlled", numeric_coupling="label")
    assert fitted.select("y", "z").equals(label.select("y", "z"))
    assert fitted["b"].is_null().equals(label["b"].is_null())
    for column in ("a", "b"):
        by_fitted = fitted.group_by("y", "z").agg(pl.col(column).drop_nulls().sort()).sort("y", "z")
        by_label = label.group_by("y", "z").agg(pl.col(column).drop_nulls().sort()).sort("y", "z")
        assert by_fitted.equals(by_label)
    assert not fitted.select("a", "b").equals(label.select("a", "b"))


def test_bad_couplings_are_parameter_errors_that_list_the_choices():
    with pytest.raises(ParameterError, match="numeric_coupling must be one of 'fitted', 'label'. Got 'labels'"):
        check_numeric_coupling("labels")
    with pytest.raises(ParameterError, match="numeric_coupling must be one of"):
        PlannedStrategy(numeric_coupling="joint")
    with pytest.raises(ParameterError, match="numeric_coupling must be one of"):
        decode(np.zeros((2, _domain().n_coords), dtype=np.float32), _domain(), 4, np.random.default_rng(0),
               numeric_coupling=None)
    assert PaperStrategy().numeric_coupling == "fitted"


def test_the_report_and_the_saved_model_decode_as_the_run_did(tmp_path):
    rng = np.random.default_rng(6)
    frame = pl.DataFrame({"y": rng.choice(["n", "p"], 300), "a": rng.random(300), "c": rng.random(300)})
    result = polars_rap.synthesize(
        frame, epsilon=4.0, delta=1e-6, domain={"y": ["n", "p"], "a": (0.0, 1.0), "c": (0.0, 1.0)}, labels=["y"],
        seed=0, progress=False, strategy={"name": "planned", "numeric_coupling": "label", "relaxed_rows": 20,
                                          "rounds": {"LT": 2}, "workload": {"n_linear_thresholds": 20}})
    assert result.report.parameters["numeric_coupling"] == "label"
    assert result.report.parameters["strategy"]["numeric_coupling"] == "label"
    loaded = SyntheticModel.load(result.model.save(tmp_path / "model"))
    margins = result.histogram_margins  # the default's (HISTOGRAM_MATCH)
    assert margins is not None and loaded.histogram_margins is not None
    expected = decode(result.relaxed, result.domain, 400, np.random.default_rng(7), method="controlled",
                      numeric_coupling="label", margins=margins)
    assert loaded.sample(400, seed=7).equals(expected)
    files = loaded.write_parquet(tmp_path / "out", 400, seed=7, block_rows=400)
    block = sample_block(result.relaxed, result.domain, 0, 400, 7, "controlled", None, "label", margins)
    assert pl.read_parquet(files).equals(block)


def test_with_a_public_table_the_coupling_follows_its_use():
    """Decoded rows keep the strategy's coupling and histogram margins with a public table too
    (after a label model's redraw they act on the new labels), but released public rows
    ("reweight", where its check chose them) keep each row's numerics ("fitted"), which the
    report's strategy settings say too, not the strategy's default "label"."""
    rng = np.random.default_rng(8)

    def table(n):
        return pl.DataFrame({"y": rng.choice(["n", "p"], n), "a": rng.random(n), "c": rng.random(n)})

    private, public = table(300), table(200)
    runs = {use: polars_rap.synthesize(
        private, epsilon=4.0, delta=1e-6, domain={"y": ["n", "p"], "a": (0.0, 1.0), "c": (0.0, 1.0)},
        labels=["y"], seed=0, progress=False, public=public, public_use=[use],
        strategy=PlannedStrategy(relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20}))
        for use in ("labels", "init", "reweight")}
    assert PlannedStrategy().numeric_coupling == "label"
    for use in ("labels", "init"):
        assert runs[use].report.parameters["numeric_coupling"] == "label"
        assert runs[use].report.parameters["strategy"]["numeric_coupling"] == "label"
        assert runs[use].histogram_margins is not None
    released = runs["reweight"].report.public_data["reweight_released"] != "synthetic rows"
    expected = "fitted" if released else "label"  # both outcomes: test_public_reweight's matched and lost tables
    assert runs["reweight"].report.parameters["numeric_coupling"] == expected
    assert runs["reweight"].report.parameters["strategy"]["numeric_coupling"] == expected
    assert (runs["reweight"].histogram_margins is None) == released


def test_label_groups_number_the_groups_as_a_row_wise_unique_does() -> None:
    """The mixed-radix numbering equals ``np.unique(codes[:, labels], axis=0)``'s inverse (so
    decoding's permutations, which sort by group, are unchanged)."""
    from polars_rap.decode.numeric_coupling import label_groups

    rng = np.random.default_rng(0)
    for _ in range(30):
        codes = rng.integers(0, rng.integers(1, 7), (int(rng.integers(1, 2_000)), 5)).astype(np.int32)
        labels = [int(b) for b in rng.choice(5, int(rng.integers(1, 4)), replace=False)]
        _, expected = np.unique(codes[:, labels], axis=0, return_inverse=True)
        assert np.array_equal(label_groups(codes, labels), expected.reshape(-1))
