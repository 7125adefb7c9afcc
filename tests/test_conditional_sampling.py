"""Conditional sampling (issue #76): ``model.sample(rows, where=...)`` against the model's exact
conditional law.

Where decoding keeps each relaxed row's numerics (the fitted coupling, no histogram margins) the
fitted distribution is the relaxed rows' equal-weight mixture: row ``i`` gives a category with
its (renormalised) probability and the numeric value it decodes to. Given a condition, row ``i``
weighs ``w_i = P_i(condition)`` and the exact conditional margin of a category is
``sum_i w_i P_i(category | condition) / sum_i w_i``, computed here from the relaxed rows alone;
the default decoding draws the categories the same way. The default decoding then moves the
numerics with steps over the whole sample (the label coupling, numeric ties, histogram
margins, rank pairs), so there the law given a condition is the unconditioned sample's law
restricted to the condition: compared with a filtered unconditioned sample by two-sample
tests. All tests are at the 1% level.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

import polars_rap
from polars_rap import PlannedStrategy, ProjectionConfig
from polars_rap.cli import commands as cli
from polars_rap.decode.decoding import decoded_values
from polars_rap.schema.encoding import block_slices

DOMAIN = {"sex": ["F", "M"], "group": ["a", "b", "c", "d", "e"], "age": (18, 90),
          "hours": {"bounds": (0.0, 99.0), "nullable": True}, "y": [0, 1]}
LEVEL = 0.01


def _frame(n: int = 1_500, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], n)
    group = rng.choice(["a", "b", "c", "d", "e"], n, p=[0.4, 0.3, 0.2, 0.09, 0.01])
    age = np.clip(rng.normal(45, 15, n) + 8 * (sex == "M"), 18, 90).round().astype(np.int64)
    hours = pl.Series(np.clip(rng.normal(38, 10, n), 0, 99)).scatter(np.flatnonzero(rng.random(n) < 0.2), None)
    y = ((age > 45) ^ (rng.random(n) < 0.2)).astype(np.int64)
    return pl.DataFrame({"sex": sex, "group": group, "age": age, "hours": hours, "y": y},
                        schema={"sex": pl.String, "group": pl.String, "age": pl.Int64, "hours": pl.Float64,
                                "y": pl.Int64})


def _fit(**strategy):
    return polars_rap.synthesize(
        _frame(), epsilon=2.0, delta=1e-6, domain=DOMAIN, labels=["y"], seed=0, progress=False,
        strategy=PlannedStrategy(relaxed_rows=40, rounds={"CM": 2, "LT": 2, "MM": 1},
                                 workload={"n_linear_thresholds": 40, "n_mixed_marginals": 20},
                                 projection=ProjectionConfig(max_steps=20), **strategy))


@pytest.fixture(scope="module")
def model():
    """A default fit: controlled decoding, the label coupling, histogram margins."""
    return _fit().model


@pytest.fixture(scope="module")
def fitted_model():
    """The fitted coupling and no histograms: each decoded row keeps its relaxed row's numerics,
    so every condition's law is exact from the relaxed rows."""
    model = _fit(numeric_coupling="fitted", histogram_share=0.0).model
    assert model.histogram_margins is None
    return model


# ------------------------------------------------------------- exact laws from the relaxed rows
def _probabilities(model, column: str) -> np.ndarray:
    """float64[n_relaxed, n_codes]: each relaxed row's renormalised probabilities of a block."""
    block = model.domain.block_index(column, indicator=not model.domain[column].is_categorical)
    probs = np.clip(model.relaxed[:, block_slices(model.domain)[block]].astype(np.float64), 0, None)
    return probs / probs.sum(axis=1, keepdims=True)


def _values(model, column: str) -> np.ndarray:
    """float64[n_relaxed]: each relaxed row's decoded value of a numeric column."""
    j = [spec.name for spec in model.domain.numeric_columns].index(column)
    u = np.clip(model.relaxed[:, model.domain.n_categorical_coords + j].astype(np.float64), 0, 1)
    return decoded_values(u, model.domain[column])


def _code(model, column: str, value) -> int:
    return list(model.domain[column].categories).index(value)


def _conditional_margin(model, weights: np.ndarray, column: str) -> np.ndarray:
    """float64[n_codes]: the exact law of ``column`` given the condition (rows weighted by
    ``weights``, the column itself unconditioned)."""
    return weights @ _probabilities(model, column) / weights.sum()


def _chi2_pvalue(sample: pl.Series, categories, expected: np.ndarray) -> float:
    observed = np.array([(sample == c).sum() for c in categories], dtype=np.float64)
    keep = expected * len(sample) >= 5  # chi2 needs expected counts of 5 or more
    rest = observed[~keep].sum()
    obs = np.append(observed[keep], rest) if (~keep).any() else observed[keep]
    exp = np.append(expected[keep], expected[~keep].sum()) if (~keep).any() else expected[keep]
    return float(stats.chisquare(obs, exp / exp.sum() * obs.sum()).pvalue)


def _ks_pvalue(sample: np.ndarray, atoms: np.ndarray, weights: np.ndarray) -> float:
    """KS p-value of ``sample`` against the discrete law putting ``weights`` on ``atoms``. Both
    CDFs step only at the atoms, so the KS distance is their largest gap there (scipy's
    ``kstest`` assumes a continuous law and counts each atom's jump as a gap); the continuous
    KS law of that distance is conservative for a discrete law."""
    points = np.unique(atoms[weights > 0])
    order = np.argsort(atoms)
    expected = np.cumsum(weights[order])[np.searchsorted(atoms[order], points, side="right") - 1] / weights.sum()
    observed = np.searchsorted(np.sort(sample), points, side="right") / len(sample)
    return float(stats.kstwo.sf(np.abs(observed - expected).max(), len(sample)))


# ------------------------------------------------------------------------------ the tests
def test_categorical_margins_given_a_category_and_a_range_match_the_exact_conditional(fitted_model):
    """where={"sex": "F", "age": (50, None)}: every row satisfies it, and group's and y's margins
    equal sum_i w_i P_i(.) / sum_i w_i with w_i = P_i(F) 1[age_i >= 50], by chi2 at 1%."""
    model = fitted_model
    rows = 200_000
    sample = model.sample(rows, seed=1, where={"sex": "F", "age": (50, None)})
    assert sample.height == rows and sample.schema == model.sample(10, seed=0).schema
    assert sample["sex"].unique().to_list() == ["F"] and sample["age"].min() >= 50
    weights = _probabilities(model, "sex")[:, _code(model, "sex", "F")] * (_values(model, "age") >= 50)
    for column in ("group", "y"):
        expected = _conditional_margin(model, weights, column)
        assert _chi2_pvalue(sample[column], model.domain[column].categories, expected) > LEVEL, column


def test_a_numeric_margin_given_a_category_matches_the_exact_conditional_by_ks(fitted_model):
    """Hours given group in {c, d} and hours in [20, 60] is the mixture of the relaxed rows'
    values weighted by P_i(group in {c, d}) P_i(hours not null) 1[20 <= hours_i <= 60], by KS."""
    model = fitted_model
    rows = 100_000
    sample = model.sample(rows, seed=2, where={"group": ["c", "d"], "hours": (20.0, 60.0)})
    hours = sample["hours"].to_numpy()
    assert sample.height == rows and sample["group"].is_in(["c", "d"]).all()
    assert np.all((hours >= 20.0) & (hours <= 60.0))
    values = _values(model, "hours")
    in_group = _probabilities(model, "group")[:, [_code(model, "group", "c"), _code(model, "group", "d")]].sum(axis=1)
    weights = in_group * _probabilities(model, "hours")[:, 0] * ((values >= 20.0) & (values <= 60.0))
    assert _ks_pvalue(hours, values, weights) > LEVEL


def _chi2_two_sample_pvalue(a: pl.Series, b: pl.Series) -> float:
    """Chi2 p-value that two samples of a categorical column share one law (categories with
    fewer than 5 expected rows pooled)."""
    categories = sorted(set(a.drop_nulls().to_list()) | set(b.drop_nulls().to_list()), key=str)
    table = np.array([[(x == c).sum() for c in categories] + [x.null_count()] for x in (a, b)], dtype=np.float64)
    expected = table.sum(axis=0) * table.sum(axis=1, keepdims=True)[0] / table.sum()
    keep = expected >= 5
    pooled = np.column_stack([table[:, keep], table[:, ~keep].sum(axis=1)]) if (~keep).any() else table[:, keep]
    pooled = pooled[:, pooled.sum(axis=0) > 0]
    return float(stats.chi2_contingency(pooled).pvalue)


@pytest.mark.parametrize("where", [{"sex": "F"}, {"age": (50, None)}, {"hours": (None, 35.0), "y": 1}])
def test_the_default_decoding_gives_the_unconditioned_law_given_the_condition(model, where):
    """Under the default decoding (label coupling, histogram margins) a conditioned sample is
    drawn from the law of an unconditioned sample restricted to the condition: every other
    column agrees with a filtered unconditioned sample, categories by chi2 and numerics by KS.
    (Running decoding's steps among the conditioned rows alone failed this by far: a condition
    on sex left each label's numerics the ones women's relaxed rows hold, one on age picked the
    relaxed rows whose own age passed, which the coupling then gives away.)"""
    rows = 40_000
    sample = model.sample(rows, seed=8, where=where)
    expression = pl.all_horizontal([
        (pl.col(c).is_between(v[0] if v[0] is not None else -1e9, v[1] if v[1] is not None else 1e9)
         if isinstance(v, tuple) else pl.col(c) == v) for c, v in where.items()])
    filtered = model.sample(400_000, seed=9).filter(expression)
    assert sample.height == rows and sample.select(expression.all()).item() and filtered.height > 20_000
    for spec in model.domain.columns:
        if spec.name in where:
            continue
        if spec.is_categorical:
            assert _chi2_two_sample_pvalue(sample[spec.name], filtered[spec.name]) > LEVEL, spec.name
        else:
            assert stats.ks_2samp(sample[spec.name].drop_nulls(), filtered[spec.name].drop_nulls()).pvalue > LEVEL, spec.name
            assert _chi2_two_sample_pvalue(sample[spec.name].is_null(), filtered[spec.name].is_null()) > LEVEL


def test_nulls_can_be_asked_for_and_excluded(model):
    """A value None selects the nulls of a nullable column; a range excludes them."""
    nulls = model.sample(5_000, seed=3, where={"hours": None})
    assert nulls["hours"].null_count() == 5_000
    either = model.sample(5_000, seed=3, where={"hours": [None], "sex": "M"})
    assert either["hours"].null_count() == 5_000 and (either["sex"] == "M").all()
    ranged = model.sample(5_000, seed=3, where={"hours": (None, 30.0)})
    assert ranged["hours"].null_count() == 0 and ranged["hours"].max() <= 30.0


def test_a_rare_condition_gets_exactly_its_rows_and_its_exact_margin(model):
    """The rarest (group, sex) cell still yields exactly ``rows`` rows, all inside it, with the
    exact conditional law of y; rejection from unconditional rows would need ~rows / P."""
    weights_by_cell = {(g, s): _probabilities(model, "group")[:, _code(model, "group", g)]
                       * _probabilities(model, "sex")[:, _code(model, "sex", s)]
                       for g in DOMAIN["group"] for s in DOMAIN["sex"]}
    (group, sex), weights = min(weights_by_cell.items(), key=lambda item: item[1].mean())
    assert weights.mean() < 0.02  # rare indeed
    sample = model.sample(50_000, seed=4, where=f"\"group\" = '{group}' AND sex = '{sex}'")
    assert sample.height == 50_000 and (sample["group"] == group).all() and (sample["sex"] == sex).all()
    expected = _conditional_margin(model, weights, "y")
    assert _chi2_pvalue(sample["y"], [0, 1], expected) > LEVEL


def test_a_condition_over_several_columns_is_met_by_rejection_with_the_exact_law(fitted_model):
    """(sex = F) OR (age > 60) spans two columns, so it is checked on decoded rows; with the
    fitted coupling a decoded row is its relaxed row's draw, whose probability of the condition
    is P_i(F) + P_i(M) 1[age_i > 60]; group's margin matches sum_i w_i P_i(group) / sum_i w_i
    (group independent of sex within a relaxed row)."""
    model = fitted_model
    rows = 100_000
    sample = model.sample(rows, seed=5, where=(pl.col("sex") == "F") | (pl.col("age") > 60))
    assert sample.height == rows
    assert sample.select(((pl.col("sex") == "F") | (pl.col("age") > 60)).all()).item()
    female = _probabilities(model, "sex")[:, _code(model, "sex", "F")]
    weights = female + (1 - female) * (_values(model, "age") > 60)
    expected = _conditional_margin(model, weights, "group")
    assert _chi2_pvalue(sample["group"], DOMAIN["group"], expected) > LEVEL
    expected_sex = np.array([female @ (weights > 0), (1 - female) @ (_values(model, "age") > 60)]) / weights.sum()
    assert _chi2_pvalue(sample["sex"], ["F", "M"], expected_sex) > LEVEL


def test_the_same_seed_gives_the_same_rows_and_the_forms_agree(model):
    """A dict, a Polars expression and a SQL string of one condition give the same rows."""
    as_dict = model.sample(20_000, seed=6, where={"sex": "M", "age": (30, 40)})
    as_expr = model.sample(20_000, seed=6, where=(pl.col("sex") == "M") & pl.col("age").is_between(30, 40))
    as_sql = model.sample(20_000, seed=6, where="sex = 'M' AND age BETWEEN 30 AND 40")
    assert as_dict.equals(model.sample(20_000, seed=6, where={"sex": "M", "age": (30, 40)}))
    assert as_dict.equals(as_expr) and as_dict.equals(as_sql)
    assert not as_dict.equals(model.sample(20_000, seed=7, where={"sex": "M", "age": (30, 40)}))


@pytest.mark.parametrize("where", [
    "age < 30 AND age > 60",                       # a contradiction within one column
    {"age": (45.2, 45.8)},                         # no whole year inside: age is an integer column
    (pl.col("sex") == "F") & (pl.col("sex") == "M"),
])
def test_a_contradictory_condition_is_refused_stating_its_probability(model, where):
    with pytest.raises(polars_rap.ParameterError, match=r"has probability 0 under the model"):
        model.sample(100, seed=0, where=where)


def test_a_residual_the_model_almost_never_meets_is_refused_with_its_estimate(model):
    with pytest.raises(polars_rap.ParameterError, match=r"estimated probability 0 under the model \(0 of 10000"):
        model.sample(100, seed=0, where=pl.col("age") > pl.col("hours") + 200)


@pytest.mark.parametrize(("where", "message"), [
    ({"sexx": "F"}, r"names 'sexx', which is not a column of the model; did you mean 'sex'\?"),
    ({"sex": "X"}, r"where\['sex'\]: \['X'\] not among the column's categories"),
    ({"age": (60, 50)}, r"the range \(60, 50\) is empty"),
    ({"age": (100, None)}, r"lies outside the column's bounds \[18, 90\]"),
    ({"age": [17]}, r"17 is outside the column's bounds"),
    ({"group": []}, r"the list of values is empty"),
    ({"sex": None}, r"declared without nulls"),
    ({}, r"must name at least one column"),
    ("sex = = 'F'", r"is not a valid SQL expression"),
    ("hours > 3 AND nosuch < 2", r"names 'nosuch'"),
    (pl.col("age") > pl.col("age").mean(), r"must be a row-wise boolean expression"),
    (pl.col("age") + 1, r"must be a row-wise boolean expression"),
])
def test_bad_conditions_are_refused_naming_the_column_and_the_fix(model, where, message):
    with pytest.raises(polars_rap.ParameterError, match=message):
        model.sample(10, seed=0, where=where)


def test_the_command_line_samples_under_a_sql_condition(model, tmp_path, capsys):
    path = model.save(tmp_path / "model")
    out = tmp_path / "women.parquet"
    status = cli.main(["sample", str(path), "-n", "3000", "-o", str(out), "--seed", "1", "--quiet",
                       "--where", "sex = 'F' AND age >= 50"])
    assert status == 0
    frame = pl.read_parquet(out)
    assert frame.height == 3000 and (frame["sex"] == "F").all() and frame["age"].min() >= 50
    assert frame.equals(polars_rap.load(path).sample(3000, seed=1, where="sex = 'F' AND age >= 50"))
    capsys.readouterr()
    assert cli.main(["sample", str(path), "-n", "10", "-o", str(tmp_path / "x.parquet"),
                     "--where", "age > 200"]) == 2
    assert "has probability 0 under the model" in capsys.readouterr().err  # no relaxed row's age passes
    assert cli.main(["sample", str(path), "-n", "10", "-o", str(tmp_path / "y.parquet"),
                     "--where", "age < 30 AND age > 60"]) == 2
    assert "has probability 0 under the model" in capsys.readouterr().err
    assert cli.main(["sample", str(path), "-n", "10", "-o", str(tmp_path / "parts"), "--block-rows", "5",
                     "--where", "age > 30"]) == 2


def test_with_a_public_label_model_a_label_condition_is_met_after_the_redraw():
    """A public label model redraws the labels after decoding, so a condition on a label column
    is checked on the redrawn rows (rejection) and still holds on every row."""
    rng = np.random.default_rng(2)

    def table(n):
        return pl.DataFrame({"y": rng.choice(["n", "p"], n), "a": rng.random(n), "c": rng.random(n)})

    res = polars_rap.synthesize(
        table(300), epsilon=4.0, delta=1e-6, domain={"y": ["n", "p"], "a": (0.0, 1.0), "c": (0.0, 1.0)},
        labels=["y"], seed=0, progress=False, public=table(200), public_use=["labels"],
        strategy=PlannedStrategy(relaxed_rows=20, rounds={"LT": 2}, workload={"n_linear_thresholds": 20}))
    assert res.model.label_model is not None
    sample = res.model.sample(5_000, seed=0, where={"y": "p", "a": (0.2, 0.8)})
    assert sample.height == 5_000 and (sample["y"] == "p").all()
    assert sample["a"].min() >= 0.2 and sample["a"].max() <= 0.8
