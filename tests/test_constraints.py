"""Declared constraints (issue #76 item 3): rules every output row keeps, checked against the
domain before any row is read, enforced at decoding (relations computed, other rules by
redrawing), kept in the report and the saved model, counted by the quality report.

The law test compares a constrained sample with the model's exact law conditioned on the rule,
computed here from the relaxed rows alone: under the fitted coupling a decoded row picks a
relaxed row ``i`` and draws each categorical column from its probabilities independently, so
``P(sex, group | rule) ∝ sum_i p_i(sex) q_i(group) 1[rule]``.
"""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats

import polars_rap
from polars_rap import Domain, PlannedStrategy, ProjectionConfig
from polars_rap.cli import commands as cli
from polars_rap.decode.constraints import Constraints, read_constraints
from polars_rap.pipeline.model import FORMAT_VERSION
from polars_rap.errors import ParameterError, ParameterTypeError
from polars_rap.schema.encoding import block_slices

DOMAIN = {"sex": ["F", "M"], "group": ["a", "b", "c"], "age": (18, 90), "retire": (50, 75), "span": (0, 72),
          "hours": {"bounds": (0.0, 99.0), "nullable": True}, "y": [0, 1]}
RULES = {"retired_later": "age <= retire", "span": "span = retire - age"}
LEVEL = 0.01


def _frame(n: int = 1_500, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 70, n)
    retire = np.maximum(rng.integers(55, 71, n), age)
    hours = pl.Series(np.clip(rng.normal(38, 10, n), 0, 99)).scatter(np.flatnonzero(rng.random(n) < 0.2), None)
    return pl.DataFrame({
        "sex": rng.choice(["F", "M"], n), "group": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
        "age": age, "retire": retire, "span": retire - age, "hours": hours, "y": (age > 45).astype(np.int64)})


def _fit(constraints=RULES, data=None, **strategy):
    return polars_rap.synthesize(
        _frame() if data is None else data, epsilon=2.0, delta=1e-6, domain=DOMAIN, labels=["y"], seed=0,
        progress=False, constraints=constraints,
        strategy=PlannedStrategy(relaxed_rows=40, rounds={"CM": 2, "LT": 2, "MM": 1},
                                 workload={"n_linear_thresholds": 40, "n_mixed_marginals": 20},
                                 projection=ProjectionConfig(max_steps=20), **strategy))


@pytest.fixture(scope="module")
def result():
    return _fit()


@pytest.fixture(scope="module")
def domain(result) -> Domain:
    return result.domain


def _keeps(frame: pl.DataFrame) -> bool:
    return bool((frame["age"] <= frame["retire"]).all() and (frame["span"] == frame["retire"] - frame["age"]).all())


# ------------------------------------------------------------------ every row keeps the rules
def test_every_row_of_the_release_and_of_later_samples_keeps_the_rules(result, tmp_path):
    model = result.model
    assert result.data.height == 1_500 and _keeps(result.data)
    assert _keeps(model.sample(20_000, seed=1))
    conditioned = model.sample(5_000, seed=2, where={"sex": "F", "age": (40, None)})
    assert _keeps(conditioned) and conditioned.height == 5_000
    assert (conditioned["sex"] == "F").all() and (conditioned["age"] >= 40).all()
    files = model.write_parquet(tmp_path / "parts", 2_500, seed=0, block_rows=1_000)
    written = pl.read_parquet(files)
    assert written.height == 2_500 and _keeps(written)


def test_without_the_rules_the_same_fit_breaks_them():
    """The rules are not kept by chance: the unconstrained fit's rows break both."""
    data = _fit(constraints=None).data
    assert (data["age"] > data["retire"]).any()
    assert (data["span"] != data["retire"] - data["age"]).any()


def test_a_condition_on_a_computed_column_is_checked_after_the_column_is_computed(result):
    rows = result.model.sample(3_000, seed=3, where="span >= 20")
    assert rows.height == 3_000 and (rows["span"] >= 20).all() and _keeps(rows)


def test_the_report_lists_the_rules_and_how_each_is_enforced(result):
    assert result.report.parameters["constraints"] == [
        {"name": "retired_later", "rule": "age <= retire", "enforced_by": "redraw"},
        {"name": "span", "rule": "span = retire - age", "enforced_by": "repair"}]
    assert _fit(constraints=None).report.parameters["constraints"] == []


# ------------------------------------------------------------------ the law
def test_a_constrained_sample_follows_the_model_conditioned_on_the_rule():
    rule = "NOT (sex = 'F' AND \"group\" = 'a')"
    model = _fit(constraints=[rule], numeric_coupling="fitted").model
    slices = block_slices(model.domain)
    probs = {}
    for column in ("sex", "group"):
        block = np.clip(model.relaxed[:, slices[model.domain.block_index(column)]].astype(np.float64), 0, None)
        probs[column] = block / block.sum(axis=1, keepdims=True)
    joint = np.einsum("is,ig->sg", probs["sex"], probs["group"])
    joint[0, 0] = 0.0  # F and a: the rule's only excluded cell
    expected = joint / joint.sum()
    rows = model.sample(40_000, seed=5)
    observed = np.zeros((2, 3))
    for sex, group, count in rows.group_by("sex", "group").len().iter_rows():
        observed[["F", "M"].index(sex), ["a", "b", "c"].index(group)] = count
    assert observed[0, 0] == 0
    cells = expected.ravel() > 0
    statistic, p_value = stats.chisquare(observed.ravel()[cells], expected.ravel()[cells] * rows.height)
    assert p_value > LEVEL, (statistic, observed, expected * rows.height)


# ------------------------------------------------------------------ enforce, on given frames
def _small_domain() -> Domain:
    schema = {"a": pl.Int64, "b": pl.Int64, "total": pl.Int64}
    return Domain.from_mapping(schema, {"a": (0, 10), "b": {"bounds": (0, 10), "nullable": True}, "total": (0, 12)})


def test_rows_that_keep_the_rules_stay_in_place_and_the_others_are_replaced_by_rows_that_keep_them():
    domain = _small_domain()
    rules = read_constraints(["a <= b"], domain)
    frame = pl.DataFrame({"a": [1, 5, 2, 9], "b": [3, 4, None, 1], "total": [0, 0, 0, 0]})
    pool = pl.DataFrame({"a": [8, 0, 7, 3], "b": [1, 2, 2, 3], "total": [1, 2, 3, 4]})
    asked = []

    def redraw(n: int) -> pl.DataFrame:
        asked.append(n)
        return pl.concat([pool] * (n // pool.height + 1)).head(n)

    out = rules.enforce(frame, domain, redraw)
    assert asked and asked[0] >= 2
    # rows 0 and 2 keep the rule (a null operand keeps it, as a SQL CHECK); 1 and 3 are replaced
    assert out.row(0) == (1, 3, 0) and out.row(2) == (2, None, 0)
    assert out.row(1) == (0, 2, 2) and out.row(3) == (3, 3, 4)


def test_a_relation_computes_its_column_and_a_value_outside_the_domain_is_redrawn():
    domain = _small_domain()
    rules = read_constraints({"sum": "total = a + b"}, domain)
    assert rules.targets == ("total",)
    frame = pl.DataFrame({"a": [1, 9, 2], "b": [3, 9, None], "total": [0, 0, 0]})
    repaired = rules.repair(frame, domain)
    assert repaired["total"].to_list() == [4, 18, None]
    # 18 is above total's bound 12; a null total is not in its domain (declared without nulls)
    assert rules.passes(repaired, domain).tolist() == [True, False, False]
    out = rules.enforce(frame, domain, lambda n: pl.DataFrame({"a": [2] * n, "b": [2] * n, "total": [0] * n}))
    assert out["total"].to_list() == [4, 4, 4] and out["a"].to_list() == [1, 2, 2]


def test_a_relation_rounds_into_an_integer_column_and_the_quality_count_reads_it():
    domain = _small_domain()
    rules = read_constraints(["total = (a + b) / 2"], domain)
    repaired = rules.repair(pl.DataFrame({"a": [1, 4], "b": [2, 4], "total": [0, 0]}), domain)
    assert repaired["total"].to_list() == [2, 4]  # 1.5 rounds half to even, as numpy's rint
    assert rules.broken(repaired, domain) == [0]
    assert rules.broken(pl.DataFrame({"a": [1, 4], "b": [2, 4], "total": [2, 5]}), domain) == [1]


def test_rules_the_model_gives_no_probability_are_refused_with_the_share_that_kept_them():
    domain = _small_domain()
    rules = read_constraints(["a < b"], domain)
    frame = pl.DataFrame({"a": [5] * 100, "b": [1] * 100, "total": [0] * 100})
    with pytest.raises(ParameterError, match=r"kept by 0 of \d+ rows drawn from the model .*almost\) no probability"):
        rules.enforce(frame, domain, lambda n: pl.DataFrame({"a": [5] * n, "b": [1] * n, "total": [0] * n}))


# ------------------------------------------------------------------ checks before any row is read
@pytest.mark.parametrize(("rule", "error", "fragment"), [
    ("a <=", ParameterError, "not a valid SQL expression"),
    ("aa <= b", ParameterError, "names 'aa', which is not a column of the table; did you mean 'a'"),
    ("a + b", ParameterError, "must be a boolean expression .* values of Int64"),
    ("a > avg(a)", ParameterError, "must be row-wise"),
    ("a > 10", ParameterError, "cannot hold: no value of column 'a' in its domain keeps it"),
    ("a > total + 10", ParameterError, r"cannot hold: none of 100,000 rows drawn uniformly .*\['a', 'total'\]"),
    ("1 = 1", ParameterError, "reads no column"),
    (3, ParameterTypeError, "must be a SQL string or a Polars expression"),
])
def test_bad_rules_are_refused_by_name(rule, error, fragment):
    with pytest.raises(error, match=fragment):
        read_constraints([rule], _small_domain())


def test_two_relations_for_one_column_and_repeated_names_are_refused():
    domain = _small_domain()
    with pytest.raises(ParameterError, match="Two relations compute column 'total'"):
        read_constraints(["total = a + b", "total = a"], domain)
    with pytest.raises(ParameterTypeError, match="a rule .*, a list of rules or a dict"):
        read_constraints(3.5, domain)


def test_forms_of_rules_and_what_counts_as_a_relation():
    domain = _small_domain()
    rules = read_constraints({"order": pl.col("a") <= pl.col("b"), "sum": pl.col("total") == pl.col("a") + 1,
                              "fixed": "a = 3", "self": "total = total"}, domain)
    assert [r.target for r in rules.rules] == [None, "total", None, None]  # a literal or itself: a plain rule
    assert read_constraints("a <= b", domain).rules[0].name == "a <= b"
    assert read_constraints(None, domain) is None and read_constraints([], domain) is None


def test_an_impossible_rule_is_refused_before_the_rows_are_read():
    """The data holds a category outside the domain, which the pass would refuse (DataError):
    the rule's ParameterError comes first."""
    data = _frame().with_columns(sex=pl.lit("X"))
    with pytest.raises(ParameterError, match="constraint 'age > 95' cannot hold"):
        _fit(constraints=["age > 95"], data=data)


# ------------------------------------------------------------------ saved, configured, evaluated
def test_the_saved_model_keeps_its_rules_in_both_forms(tmp_path):
    result = _fit(constraints={"order": pl.col("age") <= pl.col("retire"), "span": "span = retire - age"})
    path = result.save(tmp_path / "model")
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format_version"] == FORMAT_VERSION and "constraints.json" in [f["name"] for f in manifest["files"]]
    saved = json.loads((path / "constraints.json").read_text())
    assert [entry["name"] for entry in saved] == ["order", "span"] and saved[1]["sql"] == "span = retire - age"
    model = polars_rap.load(path)
    assert model.constraints.describe() == result.constraints.describe()
    assert _keeps(model.sample(5_000, seed=0))
    result.model.save(path, overwrite=True)  # and an overwrite without rules drops the file
    polars_rap.SyntheticModel(result.relaxed, result.domain, result.report).save(path, overwrite=True)
    assert not (path / "constraints.json").exists() and polars_rap.load(path).constraints is None


def test_the_config_file_constraints_table_reaches_the_run_and_the_evaluation(tmp_path, capsys):
    real = tmp_path / "real.parquet"
    _frame().write_parquet(real)
    config = tmp_path / "spec.toml"
    domain_tables = "\n".join(
        f"[domain.{name}]\nkind = \"categorical\"\ncategories = {json.dumps(value)}" if isinstance(value, list) else
        f"[domain.{name}]\nkind = \"numeric\"\nbounds = {json.dumps(list(value['bounds'] if isinstance(value, dict) else value))}"
        + ("\nnullable = true" if isinstance(value, dict) else "")
        for name, value in DOMAIN.items())
    config.write_text('labels = ["y"]\n[constraints]\nretired_later = "age <= retire"\nspan = "span = retire - age"\n'
                      '[strategy]\nrelaxed_rows = 40\n[strategy.workload]\nn_linear_thresholds = 40\n'
                      f'n_mixed_marginals = 20\n{domain_tables}\n')
    out = tmp_path / "synthetic.parquet"
    status = cli.main(["synthesize", str(real), "-o", str(out), "--config", str(config), "--epsilon", "2",
                       "--delta", "1e-6", "--seed", "0", "--model", str(tmp_path / "model"), "--quiet"])
    assert status == 0 and _keeps(pl.read_parquet(out))
    assert polars_rap.load(tmp_path / "model").constraints.targets == ("span",)
    # real rows breaking a rule: the evaluation counts and names them
    broken_real = tmp_path / "broken.parquet"
    _frame().with_columns(span=pl.when(pl.col("age") < 30).then(0).otherwise(pl.col("span"))).write_parquet(broken_real)
    expected = int(_frame().filter((pl.col("age") < 30) & (pl.col("span") != 0)).height)
    capsys.readouterr()
    status = cli.main(["evaluate", str(broken_real), str(out), "--config", str(config), "-o",
                       str(tmp_path / "report.html"), "--ml-models", "logistic", "--quiet"])
    printed = capsys.readouterr().out
    assert status == 0
    assert f"constraint 'span' (span = retire - age) is broken by {expected:,} real rows" in printed
    assert "retired_later" not in printed


def test_a_config_constraint_that_is_not_text_is_a_config_error(tmp_path):
    from polars_rap.cli.config import ConfigError, read_config

    path = tmp_path / "spec.toml"
    path.write_text("[constraints]\norder = 3\n")
    with pytest.raises(ConfigError, match=r"\[constraints\] order must be a rule in SQL text"):
        read_config(path)


def test_the_quality_report_counts_the_rows_that_break_each_rule(result):
    from polars_rap.quality.report import quality_report

    real = _frame().with_columns(retire=pl.when(pl.col("age") > 60).then(50).otherwise(pl.col("retire")))
    report = quality_report(real, result, ml_models=["logistic"])
    table = {row["name"]: row for row in report.constraints.iter_rows(named=True)}
    assert table["retired_later"]["real_broken"] == real.filter(pl.col("age") > pl.col("retire")).height > 0
    assert table["span"]["real_broken"] == real.filter(pl.col("span") != pl.col("retire") - pl.col("age")).height
    assert table["retired_later"]["synthetic_broken"] == 0 and table["span"]["synthetic_broken"] == 0
    assert table["retired_later"]["real_broken_share"] == pytest.approx(table["retired_later"]["real_broken"] / 1_500)
    assert "Declared constraints" in report._repr_html_()
    assert isinstance(result.constraints, Constraints)
