"""``polars-rap evaluate`` and the demo's report: files written, exit codes, clean errors."""

from html.parser import HTMLParser

import polars as pl
import pytest

from polars_rap import PlannedStrategy, WorkloadSize
from polars_rap.cli import commands as cli
from polars_rap.cli import parser
from polars_rap.io import datasets
from polars_rap.pipeline import synthesis as mechanism
from polars_rap.quality.ml_utility import ML_MODELS

SMALL_OPTIONS = """
[strategy]
relaxed_rows = 50

[strategy.rounds]
CM = 1
LT = 2

[strategy.workload]
n_linear_thresholds = 100
n_mixed_marginals = 20

[strategy.projection]
max_steps = 5
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A 600-row CA sample, 200 held-out rows, its config, and a synthesis with a saved model."""
    directory = tmp_path_factory.mktemp("evaluate")
    assert cli.main(["export", "acs-income-CA", "-o", str(directory / "all.parquet"), "--config",
                     str(directory / "domain.toml"), "--rows", "800", "--quiet"]) == 0
    frame = pl.read_parquet(directory / "all.parquet")
    frame[:600].write_parquet(directory / "real.parquet")
    frame[600:].write_parquet(directory / "test.parquet")
    (directory / "ca.toml").write_text((directory / "domain.toml").read_text() + SMALL_OPTIONS)
    assert cli.main(["synthesize", str(directory / "real.parquet"), "-o", str(directory / "synthetic.parquet"),
                     "--epsilon", "1", "--delta", "1e-6", "--config", str(directory / "ca.toml"), "--seed", "0",
                     "--model", str(directory / "model"), "--quiet"]) == 0
    return directory


def evaluate_args(work, output, *extra):
    return ["evaluate", str(work / "real.parquet"), str(work / "synthetic.parquet"), "-o", str(output),
            "--config", str(work / "domain.toml"), *extra]


class _Images(HTMLParser):
    def __init__(self):
        super().__init__()
        self.sources = []

    def handle_starttag(self, tag, attrs):
        self.sources += [value for name, value in attrs if tag == "img" and name == "src"]


def test_evaluate_writes_a_report_with_privacy_and_ml_parts(work, capsys):
    output = work / "report.html"
    status = cli.main(evaluate_args(work, output, "--test", str(work / "test.parquet"), "--model", str(work / "model")))
    assert status == 0
    text = output.read_text(encoding="utf-8")
    images = _Images()
    images.feed(text)
    n_columns = len(pl.read_parquet_schema(work / "real.parquet"))
    assert len(images.sources) == 1 + n_columns + 2  # overview, columns, pair heatmap, workload errors
    assert "What was released (private)" in text and "Machine-learning utility" in text
    assert str(work) not in text
    out = capsys.readouterr().out
    assert "worst columns:" in out and "NOT private" in out
    # The output exists now: a second run needs --overwrite (usage error, nothing read).
    assert cli.main(evaluate_args(work, output)) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err


def test_evaluate_takes_the_domain_from_a_saved_model(work, tmp_path):
    output = tmp_path / "model-report.html"
    assert cli.main(["evaluate", str(work / "real.parquet"), str(work / "model"), "-o", str(output), "--quiet"]) == 0
    assert "What was released (private)" in output.read_text(encoding="utf-8")


def test_mismatched_schemas_fail_cleanly_naming_the_columns(work, tmp_path, capsys):
    pl.read_parquet(work / "synthetic.parquet").rename({"AGEP": "age"}).write_parquet(tmp_path / "renamed.parquet")
    capsys.readouterr()
    args = ["evaluate", str(work / "real.parquet"), str(tmp_path / "renamed.parquet"), "-o",
            str(tmp_path / "r.html"), "--config", str(work / "domain.toml")]
    assert cli.main(args) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("polars-rap: error: ")
    assert "only in the real table ['AGEP']" in err and "only in the synthetic table ['age']" in err
    assert not (tmp_path / "r.html").exists()


def test_evaluate_leaves_out_the_columns_the_config_drops(work, tmp_path, capsys):
    """A wide real table synthesized with ``[options] drop`` is compared on the columns kept,
    as its synthetic table holds them (the held-out rows likewise)."""
    for name in ("real", "test"):
        pl.read_parquet(work / f"{name}.parquet").with_columns(person_id=pl.int_range(pl.len())).write_parquet(
            tmp_path / f"{name}.parquet")
    config = tmp_path / "drop.toml"
    config.write_text((work / "domain.toml").read_text() + '\n[options]\ndrop = ["person_id"]\n')
    args = ["evaluate", str(tmp_path / "real.parquet"), str(work / "synthetic.parquet"), "-o",
            str(tmp_path / "report.html"), "--config", str(config), "--test", str(tmp_path / "test.parquet")]
    assert cli.main(args) == 0 and (tmp_path / "report.html").is_file()
    page = (tmp_path / "report.html").read_text()  # the real table keeps its file's name (#78)
    assert "real.parquet" in page and "in-memory" not in page
    config.write_text((work / "domain.toml").read_text())
    capsys.readouterr()
    assert cli.main([*args, "--overwrite"]) == 3  # without it, the real table's extra column is named
    assert "only in the real table ['person_id']" in capsys.readouterr().err


def test_usage_errors_exit_2(work, tmp_path, capsys):
    capsys.readouterr()
    no_domain = ["evaluate", str(work / "real.parquet"), str(work / "synthetic.parquet"), "-o", str(tmp_path / "r.html")]
    assert cli.main(no_domain) == 2
    assert "needs the public domain" in capsys.readouterr().err
    assert cli.main(evaluate_args(work, tmp_path / "r.pdf")) == 2
    assert "must end in one of" in capsys.readouterr().err
    unlabelled = tmp_path / "unlabelled.toml"
    lines = (work / "domain.toml").read_text().splitlines()
    unlabelled.write_text("\n".join(line for line in lines if not line.startswith("labels =")))
    args = [*no_domain, "--config", str(unlabelled), "--test", str(work / "test.parquet")]
    assert cli.main(args) == 2
    assert "--test is for the ML utility, which needs labels" in capsys.readouterr().err


def test_demo_writes_its_report_and_says_where(work, tmp_path, monkeypatch, capsys):
    """The demo on a 500-row slice of the task with a small synthesis, to keep the test short."""
    task = datasets.load_task("acs-income-CA")
    small = datasets.TaskData(task.name, task.frame[:500], task.domain, task.columns_spec, task.labels)
    monkeypatch.setattr(datasets, "load_task", lambda name: small)
    real_synthesize = mechanism.synthesize

    def small_synthesize(data, **kwargs):
        small = PlannedStrategy(relaxed_rows=50, rounds={"CM": 1, "LT": 2},
                                workload=WorkloadSize(n_linear_thresholds=100, n_mixed_marginals=20))
        return real_synthesize(data, **kwargs, strategy=small)

    monkeypatch.setattr(mechanism, "synthesize", small_synthesize)
    report = tmp_path / "demo-report.html"
    assert cli.main(["demo", "--seed", "0", "--report", str(report), "--quiet"]) == 0
    assert report.is_file() and "Synthetic data quality report" in report.read_text(encoding="utf-8")
    out = capsys.readouterr().out
    assert "macro F1 on held-out rows" in out and str(report.resolve()) in out
    assert all(f"    {model.replace('_', ' ')} " in out for model in ML_MODELS)  # one line per model


def test_evaluate_ml_rows_caps_both_classifiers_training_rows(work):
    """``--ml-rows`` reaches ``quality_report(ml_rows=...)``: the ML table lists 137 training
    rows for the real and the synthetic classifier (600 of each without it)."""
    output = work / "report-ml-rows.html"
    assert cli.main(evaluate_args(work, output, "--test", str(work / "test.parquet"), "--ml-rows", "137")) == 0
    ml_part = output.read_text(encoding="utf-8").split("Machine-learning utility", 1)[1]
    assert ml_part.count("<td>137</td>") == 2 * len(ML_MODELS) and "<td>600</td>" not in ml_part


def test_evaluate_ml_models_picks_the_classifiers(work, capsys):
    """``--ml-models`` reaches ``quality_report(ml_models=...)``; an unknown name is a usage
    error listing the choices, which are quality.ml_utility's."""
    output = work / "report-ml-models.html"
    assert cli.main(evaluate_args(work, output, "--test", str(work / "test.parquet"), "--ml-models", "logistic")) == 0
    ml_part = output.read_text(encoding="utf-8").split("Machine-learning utility", 1)[1]
    assert ">logistic</td>" in ml_part and "random_forest" not in ml_part and "gradient boosting" not in ml_part
    capsys.readouterr()
    assert cli.main(evaluate_args(work, output, "--test", str(work / "test.parquet"), "--ml-models", "svm")) == 2
    assert "'gradient_boosting', 'random_forest'" in capsys.readouterr().err
    assert parser._ML_MODELS == ML_MODELS
