"""What a run shows while it works (issue 16): a fit figure per measured answer that does not
rise as measurements are added, and one line per query class at the end without a terminal."""

import dataclasses
import logging

import numpy as np
import polars as pl
import pytest

import polars_rap
from polars_rap.cli import commands as cli
from polars_rap.fit.loop_record import fit_figures

from plans import OUTRIGHT  # tests/plans.py

DOMAIN = {"age": (18, 90), "hours": (0, 99), "sex": ["F", "M"], "y": [0, 1]}
SMALL = dict(relaxed_rows=30, rounds={"LT": 2}, workload={"n_linear_thresholds": 30})  # LT selects 20 of 30


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(0)
    return pl.DataFrame({"age": rng.integers(18, 91, 1000), "hours": rng.integers(0, 100, 1000),
                         "sex": rng.choice(["F", "M"], 1000), "y": rng.integers(0, 2, 1000)})


def test_with_inverse_variance_weights_the_ratio_is_the_rms_of_residuals_over_their_noise():
    rng = np.random.default_rng(1)
    stds = rng.uniform(0.001, 0.05, 200)
    residuals = rng.normal(0.0, stds)
    precision = 1.0 / stds**2
    weights = precision / precision.mean()
    residual_rms, noise_rms = fit_figures(float(np.sum(weights * residuals**2)), stds, weights)
    assert residual_rms / noise_rms == pytest.approx(np.sqrt(np.mean((residuals / stds) ** 2)), rel=1e-12)
    unweighted_rms, unweighted_noise = fit_figures(float(np.sum(residuals**2)), stds, None)
    assert unweighted_rms == pytest.approx(np.sqrt(np.mean(residuals**2)), rel=1e-12)
    assert unweighted_noise == pytest.approx(np.sqrt(np.mean(stds**2)), rel=1e-12)


def test_the_figure_stays_put_where_the_loss_grows_with_the_measurements():
    """The summed loss of ten times the answers, fitted as well, is ten times larger: the
    figure the bar shows is the same."""
    rng = np.random.default_rng(2)
    stds = np.full(100, 0.01)
    residuals = rng.normal(0.0, 0.01, 100)
    few = fit_figures(float(np.sum(residuals**2)), stds, None)
    many = fit_figures(float(np.sum(np.tile(residuals, 10) ** 2)), np.tile(stds, 10), None)
    assert many == pytest.approx(few, rel=1e-12)


def test_without_a_bar_each_class_gets_one_line_at_the_end(frame, caplog):
    with caplog.at_level(logging.INFO, logger="polars_rap"):
        polars_rap.synthesize(frame, epsilon=1.0, delta=1e-7, domain=DOMAIN, labels=["y"], seed=0,
                              progress=False, strategy=dataclasses.replace(OUTRIGHT, **SMALL))  # one outright CM step
    lines = [r.getMessage() for r in caplog.records if "fit residual rms" in r.getMessage()]
    assert [line.split(":")[0] for line in lines] == ["CM", "LT"]
    assert lines[0].startswith("CM: 1 groups (4 answers) measured in 1 step; fit residual rms ")
    assert lines[1].startswith("LT: 20 groups (20 answers) measured in 2 steps; fit residual rms ")
    assert lines[1].endswith("x the noise std")


def test_the_cli_logs_the_class_lines_off_a_terminal_and_quiet_silences_them(frame, tmp_path, capsys, caplog):
    frame.write_parquet(tmp_path / "in.parquet")
    (tmp_path / "c.toml").write_text(
        'labels = ["y"]\n[domain.age]\nkind = "numeric"\nbounds = [18, 90]\n'
        '[domain.hours]\nkind = "numeric"\nbounds = [0, 99]\n'
        '[domain.sex]\nkind = "categorical"\ncategories = ["F", "M"]\n'
        '[domain.y]\nkind = "categorical"\ncategories = [0, 1]\n'
        "[strategy]\nrelaxed_rows = 30\n[strategy.rounds]\nLT = 2\n[strategy.workload]\nn_linear_thresholds = 30\n")
    args = ["synthesize", str(tmp_path / "in.parquet"), "-o", str(tmp_path / "out.parquet"), "--epsilon", "1",
            "--delta", "1e-7", "--config", str(tmp_path / "c.toml"), "--seed", "0", "--overwrite"]
    assert cli.main(args) == 0  # the CLI sets the package's log level itself: INFO, WARNING when quiet
    assert any(r.getMessage().startswith("LT: 20 groups (20 answers) measured in 2 steps; fit residual rms")
               and r.levelno == logging.INFO for r in caplog.records)
    assert "RAP++ rounds" not in capsys.readouterr().err  # stderr is not a terminal: no bar
    caplog.clear()
    assert cli.main([*args, "--quiet"]) == 0
    assert not [r for r in caplog.records if "fit residual" in r.getMessage()]
