"""The public table's label model (``public_use="labels"``, issue 19): the fit against its
objective, the moment equations, the draws, the ridge's source, saving, and every sampling path."""

import json

import numpy as np
import polars as pl
import pytest
from scipy.optimize import minimize

import polars_rap
from polars_rap import DataError, PlannedStrategy, ProjectionConfig, WorkloadSize
from polars_rap.io.blocks import sample_block
from polars_rap.schema.domain import Domain
from polars_rap.schema.encoding import EncodedData
from polars_rap.pipeline.model import FORMAT_VERSION
from polars_rap.public.labels import FULL_SHARE_STD, NUMERIC_CELLS, RIDGE_PER_NOISE_VARIANCE, LabelModel, _fit, _logits, _n_features, _objective, _design, check_label_use, feature_index, fit_label_model, label_noise_std, redraw_share, tilt_ridge
from polars_rap.workload.queries import CLASS_CODES
from polars_rap.workload.builders import build_workload

FAST = dict(strategy=PlannedStrategy(relaxed_rows=60, rounds={"LT": 2}, projection=ProjectionConfig(max_steps=8),
                                     workload=WorkloadSize(n_linear_thresholds=100, n_mixed_marginals=20)),
            progress=False)
DECLARED = {"a": ["p", "q", "r"], "b": ["u", "v"], "x": {"bounds": (0.0, 1.0), "nullable": True},
            "y": ["no", "yes"]}


def additive_table(n: int, seed: int) -> pl.DataFrame:
    """logit P(y = yes) = 3 [a = p] + 3 [b = u] - 3, with a and b dependent (b = u for 70% of
    the rows with a = p, 30% of the others): the labels' dependence on a *given* b is what no
    2-way margin shows."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (rng.random(n) >= np.where(a == 0, 0.7, 0.3)).astype(int)
    x = np.where(rng.random(n) < 0.1, np.nan, rng.random(n))
    y = rng.random(n) < 1 / (1 + np.exp(-(3.0 * (a == 0) + 3.0 * (b == 0) - 3.0)))
    return pl.DataFrame({"a": np.array(["p", "q", "r"])[a], "b": np.array(["u", "v"])[b],
                         "x": pl.Series(x).fill_nan(None), "y": np.array(["no", "yes"])[y.astype(int)]})


@pytest.fixture(scope="module")
def domain():
    return Domain.from_mapping(additive_table(5, 0).schema, DECLARED, ["y"])


def encoded(frame, domain):
    from polars_rap.schema.encoding import encode

    return encode(frame.select(domain.names), domain)


# ------------------------------------------------------------------ the design and the fit
def test_feature_index_lays_out_an_intercept_every_other_block_and_numeric_cells(domain):
    data = EncodedData(np.array([[2, 1, 1, 0], [0, 0, 0, 1]], dtype=np.int32), np.array([[0.95], [0.3]]))
    label = domain.block_index("y")
    # blocks: a (3), b (2), y (2, the label: skipped), x's null indicator (2); x: 10 cells and a null cell
    assert [b.source for b in domain.blocks] == ["a", "b", "y", "x"]
    index = feature_index(data.codes, data.numerics, domain, label)
    assert index.tolist() == [[0, 1 + 2, 4 + 1, 6 + 0, 8 + 9], [0, 1 + 0, 4 + 0, 6 + 1, 8 + NUMERIC_CELLS]]
    assert _n_features(domain, label) == 1 + 3 + 2 + 2 + NUMERIC_CELLS + 1


@pytest.mark.parametrize("n_codes, ridge", [(2, 1e-3), (3, 1e-2)])
def test_the_newton_fit_reaches_the_objectives_minimum(n_codes, ridge):
    """Against a direct L-BFGS minimisation of the same objective (numerical gradient free)."""
    rng = np.random.default_rng(1)
    n, n_features = 2000, 9
    index = np.stack([np.zeros(n, int), 1 + rng.integers(0, 4, n), 5 + rng.integers(0, 4, n)], axis=1)
    labels = rng.integers(0, n_codes, n)
    offset = rng.normal(size=(n, n_codes))
    fitted = _fit(index, labels, n_codes, n_features, offset, ridge)
    assert np.all(fitted[:, 0] == 0)
    design = _design(index, n_features)

    def loss(flat):
        coefficients = np.concatenate([np.zeros((n_features, 1)), flat.reshape(n_features, n_codes - 1)], axis=1)
        return _objective(design, offset, labels, coefficients, ridge)[0]

    reference = minimize(loss, np.zeros(n_features * (n_codes - 1)), method="BFGS", options={"gtol": 1e-10})
    assert loss(fitted[:, 1:].ravel()) <= reference.fun + 1e-12
    np.testing.assert_allclose(fitted[:, 1:].ravel(), reference.x, atol=1e-4)


def test_without_ridge_the_tilt_restores_every_feature_by_label_margin(domain):
    """The moment equations: the expected label counts per feature equal the observed ones."""
    rows = encoded(additive_table(4000, 2), domain)
    label = domain.block_index("y")
    index = feature_index(rows.codes, rows.numerics, domain, label)
    n_features = _n_features(domain, label)
    public = np.random.default_rng(3).normal(size=(n_features, 2))  # any offset model
    tilt = _fit(index, rows.codes[:, label], 2, n_features, _logits(index, public), 1e-10)
    probabilities = np.exp(_logits(index, public + tilt))
    probabilities /= probabilities.sum(axis=1, keepdims=True)
    design = _design(index, n_features)
    observed = design.T @ (rows.codes[:, label] == 1)
    np.testing.assert_allclose(design.T @ probabilities[:, 1], observed, atol=1e-5)


def conditional_error(codes: np.ndarray, domain) -> float:
    """Mean |P(y = yes | a, b) - truth| over the six (a, b) cells of :func:`additive_table`."""
    label = domain.block_index("y")
    errors = []
    for a in range(3):
        for b in range(2):
            cell = (codes[:, 0] == a) & (codes[:, 1] == b)
            truth = 1 / (1 + np.exp(-(3.0 * (a == 0) + 3.0 * (b == 0) - 3.0)))
            errors.append(abs(codes[cell, label].mean() - truth))
    return float(np.mean(errors))


def test_a_large_ridge_leaves_the_public_model_and_a_small_one_the_synthetic_margins(domain):
    public_rows = encoded(additive_table(6000, 4), domain)
    synthetic = encoded(additive_table(3000, 5).with_columns(pl.col("y").shuffle(seed=0)), domain)  # no link left
    filled = np.zeros(len(domain.blocks), dtype=bool)
    strong = fit_label_model(public_rows.codes, public_rows.numerics, filled, synthetic, domain, 1e3)
    label = domain.block_index("y")
    public_only = _fit(feature_index(public_rows.codes, public_rows.numerics, domain, label),
                       public_rows.codes[:, label], 2, _n_features(domain, label), None, 1.0 / 6000)
    np.testing.assert_allclose(strong.coefficients[0], public_only, atol=2e-3)
    weak = fit_label_model(public_rows.codes, public_rows.numerics, filled, synthetic, domain, 1e-9)
    drawn = {}
    for name, model in (("strong", strong), ("weak", weak)):
        drawn[name] = EncodedData(synthetic.codes.copy(), synthetic.numerics)
        model.redraw(drawn[name], domain, np.random.default_rng(0))
    assert conditional_error(drawn["strong"].codes, domain) < 0.05  # the public conditional
    # the weak ridge keeps the shuffled labels' margins: y independent of a and of b, as drawn
    for column in (0, 1):
        for code in np.unique(synthetic.codes[:, column]):
            cell = synthetic.codes[:, column] == code
            assert abs(drawn["weak"].codes[cell, label].mean() - synthetic.codes[cell, label].mean()) < 0.04


def test_redraw_draws_each_label_from_the_models_probabilities_with_its_expected_counts(domain):
    rows = encoded(additive_table(40_000, 6), domain)
    label = domain.block_index("y")
    coefficients = np.zeros((_n_features(domain, label), 2))
    coefficients[1 + 0, 1] = 1.5  # a = p raises the odds of "yes" by e^1.5
    coefficients[0, 1] = -0.5
    logits = np.where(rows.codes[:, 0] == 0, 1.0, -0.5)
    expected = (1 / (1 + np.exp(-logits))).sum()
    LabelModel(("y",), (coefficients,), 0.1).redraw(rows, domain, np.random.default_rng(7))
    assert rows.codes[:, label].sum() == round(expected)  # no binomial noise in the count
    for a_code, logit in ((0, 1.0), (1, -0.5), (2, -0.5)):
        chosen = rows.codes[:, 0] == a_code
        p = 1 / (1 + np.exp(-logit))
        observed = rows.codes[chosen, label].mean()
        assert abs(observed - p) < 4 * np.sqrt(p * (1 - p) / chosen.sum()), (a_code, observed, p)


def test_a_share_below_one_redraws_that_share_of_the_rows_and_keeps_the_others(domain):
    """The model says "yes" exactly where a = p: a quarter of the rows are redrawn, so about a
    quarter of the a = p rows that were "no" turn "yes", a quarter of the others that were
    "yes" turn "no", the rest keep their labels, and the count of "yes" moves a quarter of the
    way to the model's (the rows with a = p)."""
    rows = encoded(additive_table(40_000, 13), domain)
    label = domain.block_index("y")
    coefficients = np.zeros((_n_features(domain, label), 2))
    coefficients[0, 1], coefficients[1 + 0, 1] = -50.0, 100.0
    before = rows.codes[:, label].copy()
    LabelModel(("y",), (coefficients,), 0.1, share=0.25).redraw(rows, domain, np.random.default_rng(8))
    after = rows.codes[:, label]
    is_p = rows.codes[:, 0] == 0
    moved = is_p.sum() - before.sum()
    assert abs(after.sum() - (before.sum() + 0.25 * moved)) < 0.02 * abs(moved)
    assert after[(before == 1) & is_p].mean() > 0.99 and after[(before == 0) & ~is_p].mean() < 0.01
    for was, turned_to in (((before == 0) & is_p, after == 1), ((before == 1) & ~is_p, after == 0)):
        turned = turned_to[was].mean()
        assert abs(turned - 0.25) < 4 * np.sqrt(0.25 * 0.75 / was.sum()) + 0.01, turned


# ------------------------------------------------------------------ the ridge
def test_the_ridge_comes_from_the_measured_label_marginals_noise(domain):
    queries = build_workload(domain, np.random.default_rng(0), n_linear_thresholds=10, n_mixed_marginals=4)
    cm = queries.group_class == CLASS_CODES["CM"]
    reads_label = np.array([reads_label_of(queries, domain, g) for g in range(queries.n_groups)])
    marginals, others = np.flatnonzero(cm & reads_label), np.flatnonzero(~cm & reads_label)
    assert len(marginals) >= 2 and len(others) >= 2
    # the label marginals' median, whatever the other measurements' noise
    assert label_noise_std([marginals[0], others[0], marginals[1], others[1]], [0.01, 0.9, 0.03, 0.8],
                           queries, domain) == pytest.approx(0.02)
    # no label marginal measured: the groups that read a label
    assert label_noise_std([others[0], others[1]], [0.5, 0.9], queries, domain) == pytest.approx(0.7)
    with pytest.raises(polars_rap.ParameterError, match="at least one measurement"):
        label_noise_std([], [], queries, domain)
    assert tilt_ridge(0.02) == RIDGE_PER_NOISE_VARIANCE * 0.02 ** 2
    assert redraw_share(FULL_SHARE_STD) == redraw_share(0.1) == 1.0
    assert redraw_share(FULL_SHARE_STD / 2) == pytest.approx(0.25)


def reads_label_of(queries, domain, group):
    from polars_rap.public.prior import touches_columns

    flags = np.zeros(len(domain.blocks), dtype=bool)
    flags[domain.block_index("y")] = True
    reads = touches_columns(queries, flags, np.zeros(len(domain.numeric_columns), dtype=bool))
    return bool(reads[queries.group_offsets[group]:queries.group_offsets[group + 1]].any())


# ------------------------------------------------------------------ validation
def test_labels_need_a_label_column_and_a_public_table_holding_it(domain):
    unlabelled = Domain.from_mapping(additive_table(5, 0).schema, DECLARED, [])
    with pytest.raises(DataError, match=r"public_use 'labels' needs a label column: pass labels=\[\.\.\.\]"):
        check_label_use(unlabelled.labels, unlabelled.names)
    with pytest.raises(DataError, match=r"the public table lacks the label column 'y'.*drop 'labels' from public_use"):
        check_label_use(domain.labels, [name for name in domain.names if name != "y"])


def test_the_default_use_is_labels_when_the_public_table_holds_them_else_init():
    private = additive_table(800, 14)
    arguments = dict(epsilon=1.0, delta=1e-7, domain=DECLARED, seed=0, **FAST)
    labelled = polars_rap.synthesize(private, labels=["y"], public=additive_table(400, 15), **arguments)
    assert labelled.report.public_data["uses"] == ["labels"] and labelled.label_model is not None
    for options in ({"labels": ["y"], "public": additive_table(400, 15).drop("y")},
                    {"public": additive_table(400, 15)}):
        other = polars_rap.synthesize(private, **options, **arguments)
        assert other.report.public_data["uses"] == ["init"] and other.label_model is None


def test_synthesize_refuses_a_public_table_without_the_label_before_reading_the_rows():
    private = additive_table(800, 8)
    with pytest.raises(DataError, match="the public table lacks the label column 'y'"):
        polars_rap.synthesize(private, epsilon=1.0, delta=1e-7, domain=DECLARED, labels=["y"], seed=0,
                              public=additive_table(300, 9).drop("y"), public_use=["labels"], **FAST)


# ------------------------------------------------------------------ in a release
@pytest.fixture(scope="module")
def released():
    """At ε = 0.1 (noisy margins, so the public conditional weighs: ridge 0.28)."""
    return polars_rap.synthesize(additive_table(3000, 10), epsilon=0.1, delta=1e-7, domain=DECLARED, labels=["y"],
                                 seed=0, public=additive_table(5000, 11), public_use=["labels"], **FAST)


def test_a_release_records_the_model_and_its_labels_follow_the_public_conditional(released):
    record = released.report.public_data
    assert record["uses"] == ["labels"] and record["rho_charged"] == 0.0
    assert record["label_ridge"] == released.label_model.ridge > 0
    assert record["label_share"] == released.label_model.share == 1.0  # ε = 0.1: noisy margins, every row
    assert "100% of labels drawn from its model, ridge" in released.report.summary()
    plain = polars_rap.synthesize(additive_table(3000, 10), epsilon=0.1, delta=1e-7, domain=DECLARED, labels=["y"],
                                  seed=0, **FAST)
    assert released.report.rho_spent == plain.report.rho_spent  # post-processing: nothing more charged

    # P(y | a, b) against the truth, with the model and without, over six seeds (one seed's
    # ratio ranges 0.24-0.59: the loop's path at eps = 0.1 moves both runs' margins)
    domain = released.domain
    with_model = [conditional_error(encoded(released.data, domain).codes, domain)]
    without = [conditional_error(encoded(plain.data, domain).codes, domain)]
    for seed in range(1, 6):
        run = dict(epsilon=0.1, delta=1e-7, domain=DECLARED, labels=["y"], seed=seed, **FAST)
        modelled = polars_rap.synthesize(additive_table(3000, 10), public=additive_table(5000, 11),
                                         public_use=["labels"], **run)
        with_model.append(conditional_error(encoded(modelled.data, domain).codes, domain))
        without.append(conditional_error(encoded(polars_rap.synthesize(additive_table(3000, 10), **run).data,
                                                 domain).codes, domain))
    assert np.mean(with_model) < 0.05 and np.mean(with_model) < np.mean(without) / 2, (with_model, without)


def test_every_sampling_path_applies_the_model_and_saved_models_keep_it(released, tmp_path):
    model = released.model
    assert model.label_model is released.label_model
    saved = released.save(tmp_path / "model")
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION >= 7  # label_model.arrow since format 7
    assert "label_model.arrow" in {entry["name"] for entry in manifest["files"]}
    loaded = polars_rap.load(saved)
    for ours, theirs in zip(loaded.label_model.coefficients, model.label_model.coefficients, strict=True):
        np.testing.assert_array_equal(ours, theirs)
    assert (loaded.label_model.ridge, loaded.label_model.share) == (model.label_model.ridge, model.label_model.share)
    assert loaded.sample(2000, seed=3).equals(model.sample(2000, seed=3))
    files = loaded.write_parquet(tmp_path / "parts", 2500, seed=4, block_rows=1000)
    decoding, coupling = model.report.parameters["decoding"], model.report.parameters["numeric_coupling"]
    assert coupling == "label" and model.histogram_margins is not None  # numerics follow the redrawn labels
    expected = sample_block(model.relaxed, model.domain, 1, 1000, 4, decoding, labels=model.label_model,
                            numeric_coupling=coupling, margins=model.histogram_margins)
    assert pl.read_parquet(files[1]).equals(expected)
    without = sample_block(model.relaxed, model.domain, 1, 1000, 4, decoding, numeric_coupling=coupling,
                           margins=model.histogram_margins)
    assert not without.equals(expected) and without.select("a", "b").equals(expected.select("a", "b"))
    # saved again without a label model over the same folder: the old file goes
    from polars_rap.pipeline.model import SyntheticModel

    SyntheticModel(model.relaxed, model.domain, model.report).save(saved, overwrite=True)
    assert not (saved / "label_model.arrow").exists() and polars_rap.load(saved).label_model is None


def test_a_label_model_that_does_not_fit_the_domain_is_a_data_error(released, domain):
    table = released.label_model.to_arrow()
    other = Domain.from_mapping(additive_table(5, 0).schema, {**DECLARED, "a": ["p", "q", "r", "s"]}, ["y"])
    with pytest.raises(DataError, match=r"the label model of 'y' has \d+ coefficients; the domain needs"):
        LabelModel.from_arrow(table, other)
    with pytest.raises(DataError, match="not one polars-rap wrote"):
        LabelModel.from_arrow(table.replace_schema_metadata({}), domain)


def test_a_large_public_table_is_fitted_on_a_sample(monkeypatch, domain, caplog):
    from polars_rap.public import labels as public_labels
    from polars_rap.public.prior import open_public, read_public

    table = read_public(open_public(additive_table(3000, 12), None, domain.names), domain)
    relaxed = np.full((4, domain.n_coords), 0.5, dtype=np.float32)
    monkeypatch.setattr(public_labels, "PUBLIC_FIT_ROWS", 500)
    monkeypatch.setattr(public_labels, "FIT_ROWS", 400)
    with caplog.at_level("INFO", logger="polars_rap.public.labels"):
        model = public_labels.label_model_for_release(table, domain, relaxed, 0.05, np.random.default_rng(0))
    assert "fitted on 500 of the public table's 3000 rows" in caplog.text
    again = public_labels.label_model_for_release(table, domain, relaxed, 0.05, np.random.default_rng(0))
    np.testing.assert_array_equal(model.coefficients[0], again.coefficients[0])  # the same sample for a seed
    assert model.ridge == tilt_ridge(0.05) and model.share == redraw_share(0.05) == 1.0
