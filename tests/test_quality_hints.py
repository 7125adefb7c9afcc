"""Declaration hints from the real rows (issue 77): the quality report and ``polars-rap
evaluate`` say when a numeric column's real values suggest ``integer = true`` (every value
whole) or ``scale = "log"`` (strongly right-skewed), computed in the report's one pass."""

import numpy as np
import polars as pl
import pytest
from scipy import stats

from polars_rap.cli import commands as cli
from polars_rap.quality.report import quality_report
from polars_rap.quality.shape import ValueShape

N_ROWS = 2_000


def hints_of(frame: pl.DataFrame, domain: dict) -> dict[str, dict]:
    """Each column's hints as {key: value}, from a report of ``frame`` against itself."""
    report = quality_report(frame, frame, domain=domain, batch_rows=300)  # several batches
    found: dict[str, dict] = {}
    for hint in report.hints:
        found.setdefault(hint.column, {})[hint.key] = hint.value
    return found


@pytest.mark.parametrize("n_batches", [1, 7])
def test_value_shape_gives_scipys_skewness_and_exact_counts_in_any_batching(n_batches):
    """The pairwise merge of central moments equals the one-pass statistic, however the
    values are cut into batches."""
    values = np.clip(np.random.default_rng(0).lognormal(10.0, 1.0, N_ROWS), 0.0, 1e6)
    shape = ValueShape(0.0, 1e6)
    for batch in np.array_split(values, n_batches):
        shape.add(batch)
    assert shape.n_values == N_ROWS and not shape.all_whole
    assert shape.skewness == pytest.approx(stats.skew(values), rel=1e-9)
    assert shape.low_fraction == np.count_nonzero(values < 1e5) / N_ROWS


def test_a_whole_valued_float_column_gets_the_integer_hint_and_a_fractional_one_does_not():
    rng = np.random.default_rng(1)
    childs = rng.integers(0, 9, N_ROWS).astype(np.float64)
    frame = pl.DataFrame({
        "childs": childs,                                   # whole numbers in a Float64 column
        "hours": childs + rng.uniform(0, 1, N_ROWS),        # fractions
        "declared": childs,                                 # whole, and declared integer
        "count": childs.astype(np.int64),                   # an integer dtype implies integer
    })
    found = hints_of(frame, {"childs": (0, 8), "hours": (0, 9), "count": (0, 8),
                             "declared": {"bounds": (0, 8), "integer": True}})
    assert found == {"childs": {"integer": True}}


def test_a_lognormal_column_gets_the_log_scale_hint_and_a_uniform_one_does_not():
    rng = np.random.default_rng(2)
    wage = rng.lognormal(10.0, 1.0, N_ROWS) + rng.uniform(0, 1, N_ROWS)  # fractional: no integer hint
    frame = pl.DataFrame({
        "wage": wage,
        "uniform": rng.uniform(0, 1e6, N_ROWS),
        "logged": wage,                                     # already on a log scale
        "age": rng.normal(40.0, 12.0, N_ROWS),              # crowds loose bounds, but not skewed
    })
    found = hints_of(frame, {"wage": (0, 1e6), "uniform": (0, 1e6), "age": (0, 1000),
                             "logged": {"bounds": (0, 1e6), "scale": "log"}})
    assert found == {"wage": {"scale": "log"}}


def test_evaluate_prints_the_hints_as_config_lines_and_the_report_shows_them(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    rng = np.random.default_rng(3)
    frame = pl.DataFrame({"childs": rng.integers(0, 9, 500).astype(np.float64),
                          "income": rng.lognormal(10.0, 1.0, 500) + 0.5})
    frame.write_parquet(tmp_path / "real.parquet")
    (tmp_path / "spec.toml").write_text('[domain.childs]\nkind = "numeric"\nbounds = [0, 8]\n'
                                        '[domain.income]\nkind = "numeric"\nbounds = [0, 1000000]\n')
    status = cli.main(["evaluate", str(tmp_path / "real.parquet"), str(tmp_path / "real.parquet"),
                       "-o", str(tmp_path / "report.html"), "--config", str(tmp_path / "spec.toml"), "--quiet"])
    out = capsys.readouterr().out
    assert status == 0
    assert ("hint: every real value of 'childs' is whole: declare it integer (integer = true in [domain.childs])"
            in out.splitlines())
    assert "hint: the real values of 'income' are strongly right-skewed" in out
    assert 'declare a log scale (scale = "log" in [domain.income])' in out
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "integer = true in [domain.childs] in a config file; &#x27;integer&#x27;: True" in html
