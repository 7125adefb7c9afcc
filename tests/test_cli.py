"""The command line end to end on a 2,000-row CA sample: outputs, saved models, exit codes."""

import datetime
import functools
import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

import polars_rap
from polars_rap.cli import commands as cli
from polars_rap.cli.config import ConfigError
from polars_rap.io import datasets

SMALL_OPTIONS = """
[strategy]
relaxed_rows = 100

[strategy.rounds]
CM = 2
LT = 2

[strategy.workload]
n_linear_thresholds = 200
n_mixed_marginals = 50

[strategy.projection]
max_steps = 5
"""


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A 2,000-row CA sample as Parquet and a config with its domain, labels, small options."""
    directory = tmp_path_factory.mktemp("cli")
    status = cli.main(["export", "acs-income-CA", "-o", str(directory / "ca.parquet"),
                       "--config", str(directory / "domain.toml"), "--rows", "2000", "--quiet"])
    assert status == 0
    text = (directory / "domain.toml").read_text()
    (directory / "ca.toml").write_text(text + SMALL_OPTIONS)
    return directory


def synthesize_args(work, output, *extra):
    return ["synthesize", str(work / "ca.parquet"), "-o", str(output), "--epsilon", "1",
            "--delta", "1e-7", "--config", str(work / "ca.toml"), "--seed", "0", *extra]


@pytest.fixture(scope="module")
def model_run(work):
    """One synthesis that saves the data, the model and the report."""
    status = cli.main(synthesize_args(work, work / "synthetic.parquet", "--model", str(work / "model"),
                                      "--report-json", str(work / "report.json"), "--quiet"))
    return status


def test_export_writes_the_sample_and_a_config_with_the_task_domain(work):
    task = datasets.load_task("acs-income-CA")
    frame = pl.read_parquet(work / "ca.parquet")
    assert frame.height == 2000 and frame.schema == task.frame.schema
    config = cli._read_config(str(work / "domain.toml"))
    assert config.domain == task.domain and config.labels == task.labels


def test_synthesize_writes_data_model_and_report(work, model_run):
    assert model_run == 0
    data = pl.read_parquet(work / "synthetic.parquet")
    source = pl.read_parquet(work / "ca.parquet")
    assert data.schema == source.schema and data.height == source.height
    model = polars_rap.load(work / "model")
    assert model.report.n_rows == 2000 and model.relaxed.shape[0] == 100
    assert json.loads((work / "report.json").read_text()) == json.loads(model.report.to_json(full=False))
    assert model.report.parameters["rounds"]["LT"] == 2  # [strategy.rounds] reached synthesize


def test_sample_draws_more_rows_in_every_format_and_overwrites_only_when_asked(work, model_run, capsys):
    for suffix, read in ((".parquet", pl.read_parquet), (".arrow", pl.read_ipc), (".csv", pl.read_csv)):
        out = work / f"more{suffix}"
        assert cli.main(["sample", str(work / "model"), "-n", "5000", "-o", str(out), "--seed", "3"]) == 0
        frame = read(out)
        assert frame.height == 5000 and frame.columns == pl.read_parquet(work / "ca.parquet").columns
    assert pl.read_ipc(work / "more.arrow").equals(polars_rap.load(work / "model").sample(5000, seed=3))
    capsys.readouterr()
    assert cli.main(["sample", str(work / "model"), "-n", "10", "-o", str(work / "more.arrow")]) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert cli.main(["sample", str(work / "model"), "-n", "10", "-o", str(work / "more.arrow"), "--overwrite"]) == 0
    assert pl.read_ipc(work / "more.arrow").height == 10


def test_synthesize_block_rows_writes_parts_and_refuses_a_used_folder(work, model_run, capsys):
    """``--block-rows B``: OUT is a folder of Parquet parts of B rows (the run's rows in all,
    the model as without it); a second run needs ``--overwrite``, which replaces the parts."""
    parts = work / "parts"
    args = synthesize_args(work, parts, "--block-rows", "700", "--quiet")
    assert cli.main(args) == 0
    assert sorted(p.name for p in parts.iterdir()) == [f"part-00000{i}.parquet" for i in range(3)]
    frame = pl.read_parquet(sorted(parts.iterdir()))
    assert frame.height == 2000 and frame.schema == pl.read_parquet(work / "ca.parquet").schema
    capsys.readouterr()
    assert cli.main(args) == 2
    assert "the folder is not empty; pass --overwrite" in capsys.readouterr().err
    assert cli.main([*args, "--overwrite", "--rows", "800"]) == 0
    assert sorted(p.name for p in parts.iterdir()) == ["part-000000.parquet", "part-000001.parquet"]
    assert pl.read_parquet(sorted(parts.iterdir())).height == 800


def test_report_prints_the_saved_report_as_summary_or_json(work, model_run, capsys):
    capsys.readouterr()
    report = polars_rap.load(work / "model").report
    assert cli.main(["report", str(work / "model"), "--json"]) == 0
    summary = capsys.readouterr().out
    assert json.loads(summary) == json.loads(report.to_json(full=False))  # a summary by default
    assert cli.main(["report", str(work / "model"), "--json", "--full"]) == 0
    full = capsys.readouterr().out
    assert json.loads(full) == json.loads(report.to_json())  # everything when asked
    assert len(summary) < 8_000 < len(full)
    assert cli.main(["report", str(work / "model")]) == 0
    out = capsys.readouterr().out
    assert "DP over 2000 rows" in out and "100 relaxed rows" in out


def test_json_flag_puts_only_the_report_on_stdout(work, capsys):
    capsys.readouterr()
    assert cli.main(synthesize_args(work, work / "json.csv", "--json")) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["epsilon"] == 1.0 and report["n_rows"] == 2000
    assert "wrote 2000 synthetic rows" in captured.err
    assert pl.read_csv(work / "json.csv").height == 2000


def test_csv_input_takes_its_types_from_the_config_domain(work, tmp_path, capsys):
    """A CSV's column types come from the declared domain (int bounds: Int64), not from its
    rows: the output's schema is the domain's, and a neighbouring file with one 2.5 in that
    column is a data error naming it, not a silently Float64 column in the release."""
    frame = pl.read_parquet(work / "ca.parquet")
    frame.write_csv(tmp_path / "ca.csv")
    args = ["synthesize", str(tmp_path / "ca.csv"), "-o", str(tmp_path / "out.parquet"), "--epsilon", "1",
            "--delta", "1e-7", "--config", str(work / "ca.toml"), "--seed", "0", "--quiet"]
    assert cli.main(args) == 0
    released = pl.read_parquet(tmp_path / "out.parquet").schema
    assert released == pl.Schema({name: pl.Int64 if dtype.is_integer() else dtype
                                  for name, dtype in frame.schema.items()})
    row = frame["JWMNP"].arg_max()
    neighbour = frame.with_columns(frame["JWMNP"].cast(pl.Float64).scatter(row, 2.5))
    neighbour.write_csv(tmp_path / "ca.csv")
    capsys.readouterr()
    assert cli.main([*args, "--overwrite"]) == 3
    assert "column 'JWMNP'" in capsys.readouterr().err


def test_privacy_table_of_the_config_is_used_and_flags_win(work, tmp_path, capsys):
    config = tmp_path / "private.toml"
    config.write_text((work / "ca.toml").read_text() + '[privacy]\nepsilon = 0.5\ndelta = 1e-6\n')
    args = ["synthesize", str(work / "ca.parquet"), "-o", str(tmp_path / "out.ipc"), "--config",
            str(config), "--epsilon", "2", "--json", "--quiet", "--seed", "1"]
    capsys.readouterr()
    assert cli.main(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["epsilon"], report["delta"]) == (2.0, 1e-6)


def test_console_module_runs_in_a_subprocess(work, tmp_path):
    """The installed entry point, as a shell script calls it: exit status, stdout, stderr."""
    env = {**os.environ, "PYTHONPATH": str(Path(polars_rap.__file__).parents[1])}
    command = [sys.executable, "-m", "polars_rap.cli"]
    done = subprocess.run([*command, *synthesize_args(work, tmp_path / "out.arrow", "--json", "--quiet")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "INFO" not in done.stderr  # --quiet
    assert json.loads(done.stdout)["n_rows"] == 2000
    assert pl.read_ipc(tmp_path / "out.arrow").height == 2000
    missing = subprocess.run([*command, "report", str(tmp_path / "no-model")], capture_output=True,
                             text=True, env=env, timeout=120)
    assert missing.returncode == 3 and missing.stdout == ""
    assert missing.stderr.startswith("polars-rap: error: no saved model") and missing.stderr.count("\n") == 1


def write_config(tmp_path, work, text):
    path = tmp_path / "bad.toml"
    path.write_text((work / "domain.toml").read_text() + text)
    return str(path)


@pytest.mark.parametrize("extra_config, flags, status, message", [
    ("", ["--bogus"], 2, "unrecognized arguments: --bogus"),
    ("labels = [", [], 2, "is not valid TOML"),
    ("[options]\nseed = 2\nspeed = 11\n", [], 2, "unknown option 'speed' in [options]; valid options are ["),
    ("[options]\nepsilon = 3\n", [], 2, "set 'epsilon' with --epsilon or [privacy] epsilon"),
    ("[strategy.projection]\nsteps = 3\n", [], 2, "[strategy]: projection has unknown settings ['steps']"),
    ("[strategy.rounds]\nLT = -1\n", [], 2, "[strategy]: The \"rounds['LT']\" parameter must be an int"),
    ("[options]\nbackend = \"tpu\"\n", [], 2, "unknown kernel backend 'tpu'"),
    ("[privacy]\nnoise = 1\n", [], 2, "[privacy] has unknown keys ['noise']"),
    ("[options]\nlabels = [\"SEX\"]\n", [], 2, "set 'labels' with the top-level labels = [...]"),
    ("[privacy]\nepsilon = 1.0\nlabels = [\"SEX\"]\n", [], 2, "labels must come before the first [table]"),
    ("", ["--epsilon", "0"], 2, "epsilon must be > 0. Got 0.0"),
    ("", ["--epsilon", "nan"], 2, "epsilon must be a finite number"),
    ("", ["--delta", "1.5"], 2, "delta must be in (0, 1)"),
    ("", ["--rows", "0"], 2, "argument --rows: must be an int >= 1"),
])
def test_usage_and_config_errors_exit_2_with_one_line(work, tmp_path, capsys, extra_config, flags, status, message):
    config = write_config(tmp_path, work, extra_config)
    args = ["synthesize", str(work / "ca.parquet"), "-o", str(tmp_path / "out.parquet"),
            "--epsilon", "1", "--delta", "1e-7", "--config", config, *flags]
    capsys.readouterr()
    assert cli.main(args) == status
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("polars-rap: error: ") and message in err
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("text, where", [
    ("[options]\nrelaxed_rows = 100\n",
     "'relaxed_rows' is a setting of the strategy now: set relaxed_rows = ... in [strategy]"),
    ("[options]\nrounds_lt = 2\n", "'rounds_lt' is a setting of the strategy now: set LT = ... in [strategy.rounds]"),
    ("[options]\nn_linear_thresholds = 200\n",
     "'n_linear_thresholds' is a setting of the strategy now: set n_linear_thresholds = ... in [strategy.workload]"),
    ("[projection]\nmax_steps = 5\n", "the [projection] table is now [strategy.projection]"),
])
def test_an_old_tuning_key_is_a_config_error_naming_its_new_place(work, tmp_path, capsys, text, where):
    """The tuning keys moved off ``[options]`` (and ``[projection]``) onto the ``[strategy]``
    table: an old config is refused before any row is read, saying where each key goes now."""
    config = write_config(tmp_path, work, text)
    with pytest.raises(ConfigError) as info:
        polars_rap.read_config(config)
    assert where in str(info.value) and str(info.value).startswith(f"config {config!r}: ")
    capsys.readouterr()
    assert cli.main(["synthesize", str(work / "ca.parquet"), "-o", str(tmp_path / "out.parquet"), "--epsilon", "1",
                     "--delta", "1e-7", "--config", config]) == 2
    assert where in capsys.readouterr().err and not (tmp_path / "out.parquet").exists()


def test_the_strategy_tables_reach_the_run_and_its_report(work, model_run, tmp_path, capsys):
    """``[strategy]`` with ``[strategy.rounds]``, ``[strategy.workload]`` and
    ``[strategy.projection]``: the planned strategy's (the fixture's config) and the paper's, each
    run's report parameters show the values the tables set."""
    parameters = json.loads((work / "report.json").read_text())["parameters"]
    assert (parameters["relaxed_rows"], parameters["n_linear_thresholds"], parameters["n_mixed_marginals"],
            parameters["max_steps"], parameters["rounds"]["LT"]) == (100, 200, 50, 5, 2)
    assert parameters["strategy"]["name"] == "planned"
    config = write_config(tmp_path, work, '[strategy]\nname = "paper"\nrelaxed_rows = 40\nqueries_per_round = 4\n'
                                          "[strategy.rounds]\nCM = 1\nLT = 1\n"
                                          "[strategy.workload]\nn_linear_thresholds = 60\nn_mixed_marginals = 10\n"
                                          "[strategy.projection]\nmax_steps = 3\n")
    strategy = polars_rap.read_config(config).strategy
    assert isinstance(strategy, polars_rap.PaperStrategy) and strategy.rounds == {"CM": 1, "LT": 1}
    capsys.readouterr()
    assert cli.main(["synthesize", str(work / "ca.parquet"), "-o", str(tmp_path / "paper.parquet"), "--epsilon", "1",
                     "--delta", "1e-7", "--config", config, "--seed", "0", "--json", "--quiet"]) == 0
    parameters = json.loads(capsys.readouterr().out)["parameters"]
    assert parameters["strategy"] == {"name": "paper"} and parameters["selection_share"] == 0.5
    assert (parameters["relaxed_rows"], parameters["queries_per_round"], parameters["n_linear_thresholds"],
            parameters["n_mixed_marginals"], parameters["max_steps"]) == (40, 4, 60, 10, 3)
    assert (parameters["rounds"]["CM"], parameters["rounds"]["LT"]) == (1, 1)
    assert pl.read_parquet(tmp_path / "paper.parquet").height == 2000


@pytest.mark.parametrize("text, message", [
    ("[strategy]\nrelaxed_row = 100\n", "strategy 'planned' has no settings ['relaxed_row']"),
    ("[strategy]\nrelaxed_rows = 0\n", "The 'relaxed_rows' parameter must be an int in [1, inf). Got 0"),
    ("[strategy]\nselection_share = 2.0\n", "selection_share must be a number in (0, 1). Got 2.0"),
    ('[strategy]\nname = "paper"\nselection_share = 0.2\n', "strategy 'paper' has no settings ['selection_share']"),
    ('[strategy]\nname = "papr"\n', "unknown strategy 'papr'; choose one of 'planned', 'paper'"),
    ("[strategy.rounds]\nLTT = 2\n", "rounds has unknown query classes ['LTT']"),
    ("[strategy.workload]\nn_linear_thresholds = -1\n", "The 'n_linear_thresholds' parameter must be an int"),
    ("[strategy.projection]\nmax_step = 5\n", "projection has unknown settings ['max_step']"),
])
def test_a_bad_strategy_setting_is_a_config_error_naming_it(work, tmp_path, text, message):
    config = write_config(tmp_path, work, text)
    with pytest.raises(ConfigError) as info:
        polars_rap.read_config(config)
    assert str(info.value).startswith(f"config {config!r}: [strategy]: ") and message in str(info.value)


def test_missing_epsilon_and_outputs_that_exist_are_usage_errors(work, model_run, tmp_path, capsys):
    capsys.readouterr()
    args = ["synthesize", str(work / "ca.parquet"), "-o", str(tmp_path / "a.parquet"), "--delta", "1e-7"]
    assert cli.main(args) == 2
    assert "epsilon is required: pass --epsilon" in capsys.readouterr().err
    assert cli.main(synthesize_args(work, work / "synthetic.parquet")) == 2
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert cli.main(synthesize_args(work, tmp_path / "b.parquet", "--model", str(work / "model"))) == 2
    assert "not empty" in capsys.readouterr().err
    assert cli.main(synthesize_args(work, tmp_path / "b.txt")) == 2
    assert "must end in one of" in capsys.readouterr().err


def test_data_errors_exit_3(work, tmp_path, capsys):
    capsys.readouterr()
    args = synthesize_args(work, tmp_path / "out.parquet")
    args[1] = str(tmp_path / "none.parquet")
    assert cli.main(args) == 3
    assert "no file at" in capsys.readouterr().err
    head, sex_table = (work / "ca.toml").read_text().split("[domain.SEX]\n")
    narrow = tmp_path / "narrow.toml"  # SEX declared with one category: the data has two
    narrow.write_text(head + "[domain.SEX]\n" + sex_table.replace("categories = [1, 2]", "categories = [1]", 1))
    args = synthesize_args(work, tmp_path / "out.parquet")
    args[args.index("--config") + 1] = str(narrow)
    assert cli.main(args) == 3
    err = capsys.readouterr().err
    assert "'SEX'" in err and err.count("\n") == 1 and err.startswith("polars-rap: error: ")
    assert not (tmp_path / "out.parquet").exists()
    corrupt = tmp_path / "model"
    corrupt.mkdir()
    (corrupt / "manifest.json").write_text("{not json")
    assert cli.main(["sample", str(corrupt), "-n", "5", "-o", str(tmp_path / "s.parquet")]) == 3
    assert "manifest.json" in capsys.readouterr().err


def test_a_domain_that_does_not_cover_the_table_is_a_parameter_error_exit_2(work, tmp_path, capsys):
    """A declaration error that only shows against the table (a column left undeclared) is
    the config's fault, not the data's: exit 2, as ParameterError says, and no output."""
    head, sex_table = (work / "ca.toml").read_text().split("[domain.SEX]\n")
    rest = sex_table.split("\n[", 1)[1]  # the tables after [domain.SEX]
    no_sex = tmp_path / "no-sex.toml"
    no_sex.write_text(head + "[" + rest)
    args = synthesize_args(work, tmp_path / "out.parquet")
    args[args.index("--config") + 1] = str(no_sex)
    capsys.readouterr()
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    first, *fix = err.splitlines()  # the error, then the [domain.SEX] lines that fix it
    assert first.startswith("polars-rap: error: column 'SEX'") and "has no public domain" in first
    assert fix and all(line.startswith("    ") for line in fix) and "    [domain.SEX]" in fix
    assert not (tmp_path / "out.parquet").exists()


def test_a_column_left_undeclared_can_be_dropped_in_the_options(work, tmp_path, capsys):
    """The fix the error offers, ``drop = [...]`` in ``[options]``, runs: SEX is never read and
    the output has every other column."""
    head, sex_table = (work / "ca.toml").read_text().split("[domain.SEX]\n")
    no_sex = tmp_path / "no-sex.toml"
    no_sex.write_text(head + "[" + sex_table.split("\n[", 1)[1])
    args = synthesize_args(work, tmp_path / "out.parquet", "--quiet")
    args[args.index("--config") + 1] = str(no_sex)
    capsys.readouterr()
    assert cli.main(args) == 2
    assert "or leave it out with drop = ['SEX'] in [options]" in capsys.readouterr().err
    no_sex.write_text(no_sex.read_text() + "\n[options]\ndrop = ['SEX']\n")
    assert cli.main(args) == 0
    real = pl.read_parquet(work / "ca.parquet")
    assert pl.read_parquet(tmp_path / "out.parquet").columns == [c for c in real.columns if c != "SEX"]


def test_exit_status_follows_the_error_class_not_its_text():
    from polars_rap.errors import DataError, ParameterError, ParameterTypeError
    from polars_rap.privacy.ledger import BudgetExceededError

    assert cli._exit_status(ParameterError("rows look wrong")) == cli.EXIT_USAGE
    assert cli._exit_status(ParameterTypeError("x")) == cli.EXIT_USAGE
    assert cli._exit_status(DataError("The 'rows' parameter must be ...")) == cli.EXIT_DATA
    assert cli._exit_status(BudgetExceededError("x")) == cli.EXIT_BUDGET
    assert cli._exit_status(FileNotFoundError("x")) == cli.EXIT_DATA
    assert cli._exit_status(ValueError("from a reader")) == cli.EXIT_DATA
    assert cli._exit_status(RuntimeError("bug")) == cli.EXIT_INTERNAL


def test_help_names_every_exit_status(capsys):
    assert cli.main(["--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for status in ("0 ok", "1 internal error", "2 usage, config or parameter error", "3 data error",
                   "4 privacy budget error", "130 interrupted"):
        assert status in out


def test_budget_and_internal_errors_exit_4_and_1(work, tmp_path, monkeypatch, capsys):
    from polars_rap.pipeline import synthesis as mechanism
    from polars_rap.privacy.ledger import BudgetExceededError

    @functools.wraps(mechanism.synthesize)  # keeps the signature the [options] check reads
    def over_budget(*args, **kwargs):
        raise BudgetExceededError("charge of rho=0.1 would exceed the budget")

    @functools.wraps(mechanism.synthesize)
    def broken(*args, **kwargs):
        raise RuntimeError("kernel exploded")

    capsys.readouterr()
    monkeypatch.setattr(mechanism, "synthesize", over_budget)
    assert cli.main(synthesize_args(work, tmp_path / "out.parquet")) == 4
    assert "would exceed the budget" in capsys.readouterr().err
    monkeypatch.setattr(mechanism, "synthesize", broken)
    assert cli.main(synthesize_args(work, tmp_path / "out.parquet")) == 1
    err = capsys.readouterr().err
    assert "internal error (RuntimeError: kernel exploded)" in err and "Traceback" not in err
    assert cli.main(synthesize_args(work, tmp_path / "out.parquet", "--debug")) == 1
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.setenv("POLARS_RAP_DEBUG", "1")
    assert cli.main(synthesize_args(work, tmp_path / "out.parquet")) == 1
    assert "Traceback" in capsys.readouterr().err


def test_help_exits_0(capsys):
    assert cli.main(["--help"]) == 0
    assert "synthesize" in capsys.readouterr().out


def test_the_documented_config_example_is_a_valid_config(tmp_path):
    page = (Path(__file__).parents[1] / "docs" / "cli.md").read_text(encoding="utf-8")  # CLI and config files
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.toml").write_text(example)
    config = cli._read_config(str(tmp_path / "example.toml"))
    assert config.labels == ["PINCP_gt_50000"] and config.privacy == {"epsilon": 1.0, "delta": 1e-9}
    assert config.domain == {
        "AGEP": (17, 99), "PINCP": {"bounds": (0, 1500000), "scale": "log", "atoms": [0]},
        "BIRTHDATE": (datetime.date(1900, 1, 1), datetime.date(2025, 12, 31)), "SEX": [1, 2]}
    assert config.options == {} and config.strategy == polars_rap.PlannedStrategy(
        relaxed_rows=1000, rounds={"LT": 10}, workload=polars_rap.WorkloadSize(n_linear_thresholds=20000),
        projection=polars_rap.ProjectionConfig(max_steps=30))


def test_config_integer_flag_reaches_the_domain(tmp_path):
    """``integer = true`` in a [domain.NAME] table declares whole-numbered values (issue 14);
    fractional bounds with it are a usage error naming the column."""
    (tmp_path / "c.toml").write_text(
        '[domain.age]\nkind = "numeric"\nbounds = [18, 99]\nnullable = true\ninteger = true\n')
    assert cli._read_config(str(tmp_path / "c.toml")).domain == {
        "age": {"bounds": (18, 99), "nullable": True, "integer": True}}
    (tmp_path / "bad.toml").write_text('[domain.age]\nkind = "numeric"\nbounds = [18.5, 99]\ninteger = true\n')
    with pytest.raises(cli._UsageError, match="column 'age' is declared integer"):
        cli._read_config(str(tmp_path / "bad.toml"))
