"""The first hour at the command line (issue 16): ``init`` writes a config template from the
schema alone, ``read_config`` loads a config for Python, and the CLI gives its fixes as config
(TOML) lines, with a "did you mean" for a misspelt key."""

import tomllib

import polars as pl
import pytest

import polars_rap
from polars_rap.cli import commands as cli
from polars_rap.cli.config import ConfigError

SMALL = ("[strategy]\nrelaxed_rows = 30\n[strategy.rounds]\nCM = 1\nLT = 1\n"
         "[strategy.workload]\nn_linear_thresholds = 20\nn_mixed_marginals = 10\n")
"""A small loop, as a config file's [strategy] tables."""


@pytest.fixture()
def people(tmp_path):
    frame = pl.DataFrame({
        "age": [23, 35, 47, 59] * 100,
        "income": [1000.5, 2000.0, 0.0, 50.25] * 100,
        "sex": ["F", "M"] * 200,
        "smoker": [True, False, False, False] * 100,
        "region": pl.Series(["north", "south"] * 200, dtype=pl.Enum(["north", "south", "east"])),
    })
    frame.write_parquet(tmp_path / "people.parquet")
    return frame, tmp_path / "people.parquet"


def init(data, output) -> tuple[int, dict]:
    status = cli.main(["init", str(data), "-o", str(output)])
    return status, (tomllib.loads(output.read_text()) if status == 0 else {})


def test_init_writes_one_table_per_column_from_the_dtypes(people, tmp_path, capsys):
    frame, path = people
    status, config = init(path, tmp_path / "spec.toml")
    assert status == 0 and "fill in the TODOs of 3 columns" in capsys.readouterr().out  # age, income, sex
    assert config["labels"] == []  # left to choose
    assert list(config["domain"]) == frame.columns
    assert config["domain"]["age"] == {"kind": "numeric", "bounds": ["TODO", "TODO"], "nullable": False}
    assert config["domain"]["income"]["bounds"] == ["TODO", "TODO"]
    assert config["domain"]["sex"] == {"kind": "categorical", "categories": ["TODO"], "nullable": False}
    # categories a dtype declares (not the data) are written out
    assert config["domain"]["smoker"]["categories"] == [False, True]
    assert config["domain"]["region"]["categories"] == ["north", "south", "east"]


def test_init_reads_the_schema_only_even_where_every_value_is_unreadable(people, tmp_path, monkeypatch):
    """A Parquet file whose data pages are garbage (only its footer intact) and a CSV file whose
    rows are ragged and not UTF-8: a reader of values fails on both, init does not."""
    _, path = people
    data = bytearray(path.read_bytes())
    footer_length = int.from_bytes(data[-8:-4], "little")
    data[4:len(data) - 8 - footer_length] = b"\xff" * (len(data) - 12 - footer_length)
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(bytes(data))
    with pytest.raises(Exception):  # noqa: B017 (whatever Polars raises: the values are garbage)
        pl.read_parquet(broken)
    ragged = tmp_path / "broken.csv"
    ragged.write_bytes(b"age,sex\n1,2,3,4\n\xff\xfe\x00,\n\"unclosed\n")
    with pytest.raises(Exception):  # noqa: B017
        pl.read_csv(ragged)

    def no_rows(*args, **kwargs):
        raise AssertionError("init read rows")

    monkeypatch.setattr(pl.LazyFrame, "collect", no_rows)
    monkeypatch.setattr(pl.LazyFrame, "collect_batches", no_rows)
    status, config = init(broken, tmp_path / "broken.toml")
    assert status == 0 and config["domain"]["age"]["bounds"] == ["TODO", "TODO"]
    status, config = init(ragged, tmp_path / "csv.toml")
    assert status == 0 and config["domain"]["age"]["kind"] == "TODO"  # a CSV file has no dtypes


def test_a_template_is_refused_until_filled_in_then_synthesizes(people, tmp_path, capsys):
    frame, path = people
    spec = tmp_path / "spec.toml"
    assert init(path, spec)[0] == 0
    with pytest.raises(ConfigError, match="'age', 'income', 'sex' still hold TODO placeholders"):
        polars_rap.read_config(spec)
    args = ["synthesize", str(path), "-o", str(tmp_path / "out.parquet"), "--config", str(spec),
            "--epsilon", "1", "--delta", "1e-6", "--seed", "0", "--quiet"]
    capsys.readouterr()
    assert cli.main(args) == 2 and "'age', 'income', 'sex' still hold TODO" in capsys.readouterr().err
    text = (spec.read_text()
            .replace('bounds = ["TODO", "TODO"]', "bounds = [0, 100]", 1)
            .replace('bounds = ["TODO", "TODO"]', "bounds = [0, 10000]", 1)
            .replace('categories = ["TODO"]', 'categories = ["F", "M"]')
            .replace("labels = []", 'labels = ["sex"]'))
    spec.write_text(text + "\n" + SMALL)
    config = polars_rap.read_config(spec)
    assert config.labels == ["sex"] and config.domain["age"] == (0, 100)
    assert cli.main(args) == 0
    assert pl.read_parquet(tmp_path / "out.parquet").schema == frame.schema


def test_read_config_gives_the_keywords_the_cli_passes(people, tmp_path):
    frame, _ = people
    spec = tmp_path / "spec.toml"
    spec.write_text('labels = ["sex"]\n[privacy]\nepsilon = 2.0\ndelta = 1e-6\n'
                    '[domain.age]\nkind = "numeric"\nbounds = [18, 99]\n'
                    '[domain.sex]\nkind = "categorical"\ncategories = ["F", "M"]\n'
                    + SMALL + '[strategy.projection]\nmax_steps = 3\n')
    config = polars_rap.read_config(spec)
    assert isinstance(config, polars_rap.Config)
    keywords = config.keywords()
    assert keywords["domain"] == {"age": (18, 99), "sex": ["F", "M"]} and keywords["epsilon"] == 2.0
    assert keywords["strategy"].projection.max_steps == 3 and keywords["strategy"].relaxed_rows == 30
    result = polars_rap.synthesize(frame.select("age", "sex"), seed=0, progress=False, **keywords)
    assert result.report.epsilon == 2.0 and result.report.parameters["relaxed_rows"] == 30


@pytest.mark.parametrize("text, suggestion, unknown", [
    ('label = ["sex"]\n', "did you mean 'labels'?", "unknown"),
    ("[privacy]\nepsilom = 1.0\n", "did you mean 'epsilon'?", "unknown"),
    ("[options]\ninfer_domian = true\n", "did you mean 'infer_domain'?", "unknown"),
    ("[options]\nrounds_tl = 2\n", "did you mean 'rounds_lt', a setting of the strategy now: set LT = ... in "
                                   "[strategy.rounds]", "unknown"),
    ("[strategy]\nrelaxed_row = 30\n", "did you mean 'relaxed_rows'?", "has no settings"),
    ("[strategy.workload]\nn_linear_threshold = 20\n", "did you mean 'n_linear_thresholds'?", "unknown"),
    ("[strategy.projection]\nmax_step = 2\n", "did you mean 'max_steps'?", "unknown"),
    ('[domain.age]\nkind = "numeric"\nbound = [0, 1]\n', "did you mean 'bounds'?", "unknown"),
    ('[domain.sex]\nkind = "categorical"\ncategories = ["F"]\nnulable = true\n', "did you mean 'nullable'?",
     "unknown"),
])
def test_an_unknown_config_key_gets_the_closest_valid_one(tmp_path, text, suggestion, unknown):
    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(ConfigError, match=unknown) as info:
        polars_rap.read_config(tmp_path / "c.toml")
    assert str(info.value).endswith(suggestion)


def fixes(stderr: str) -> tuple[str, dict]:
    """The error line and the config its indented lines make."""
    lines = stderr.strip().splitlines()
    error = next(line for line in lines if line.startswith("polars-rap: error: "))
    fix = [line[4:] for line in lines[lines.index(error) + 1:] if line.startswith("    ") or not line]
    return error, tomllib.loads("\n".join(fix))


def test_the_cli_gives_a_missing_domain_as_config_lines_not_python(people, tmp_path, capsys):
    _, path = people
    capsys.readouterr()
    status = cli.main(["synthesize", str(path), "-o", str(tmp_path / "o.parquet"), "--epsilon", "1",
                       "--delta", "1e-6", "--quiet"])
    error, config = fixes(capsys.readouterr().err)
    assert status == 2 and "3 columns have no public domain: 'age' (Int64), 'income' (Float64), 'sex'" in error
    assert "domain={" not in error and "infer_domain = true in [options]" in error and "polars-rap init" in error
    assert config["domain"] == {
        "age": {"kind": "numeric", "bounds": ["TODO", "TODO"]},
        "income": {"kind": "numeric", "bounds": ["TODO", "TODO"]},
        "sex": {"kind": "categorical", "categories": ["TODO"]},
    }


def test_the_cli_gives_a_nullable_fix_as_config_lines(people, tmp_path, capsys):
    frame, _ = people
    path = tmp_path / "nulls.parquet"
    frame.select("age", "sex").with_columns(pl.when(pl.col("age") == 23).then(None).otherwise(pl.col("age"))
                                            .alias("age")).write_parquet(path)
    spec = tmp_path / "spec.toml"
    spec.write_text('[domain.age]\nkind = "numeric"\nbounds = [18, 99]\n'
                    '[domain.sex]\nkind = "categorical"\ncategories = ["F", "M"]\n')
    capsys.readouterr()
    status = cli.main(["synthesize", str(path), "-o", str(tmp_path / "o.parquet"), "--epsilon", "1",
                       "--delta", "1e-6", "--config", str(spec), "--quiet"])
    error, config = fixes(capsys.readouterr().err)
    assert status == 3 and "column 'age' holds 100 nulls/NaN" in error and "domain={" not in error
    assert config["domain"] == {"age": {"kind": "numeric", "bounds": [18, 99], "nullable": True}}


def test_the_cli_shows_a_library_warning_as_one_line(people, tmp_path, capsys):
    frame, _ = people
    path = tmp_path / "small.parquet"
    frame.select("age", "sex").write_parquet(path)
    spec = tmp_path / "spec.toml"
    spec.write_text('[domain.age]\nkind = "numeric"\nbounds = [18, 99]\n'
                    '[domain.sex]\nkind = "categorical"\ncategories = ["F", "M"]\n' + SMALL)
    capsys.readouterr()
    status = cli.main(["synthesize", str(path), "-o", str(tmp_path / "o.parquet"), "--epsilon", "1",
                       "--delta", "0.01", "--config", str(spec), "--quiet", "--seed", "0"])
    err = capsys.readouterr().err
    assert status == 0 and err.startswith("polars-rap: warning: delta=0.01 is at least 1/n") and err.count("\n") == 1


def table_lines(text: str, name: str) -> list[str]:
    """The lines of ``[domain.NAME]`` in a template, up to the blank line that ends it."""
    lines = [*text.splitlines(), ""]
    start = lines.index(next(line for line in lines if line.startswith(f"[domain.{name}]")))
    return lines[start:lines.index("", start)]


def test_init_shows_integer_for_float_columns_and_scale_for_numeric_ones_only():
    """Issue 77: a float column of whole numbers (a count) came out with fractions because
    nothing told the user to declare it integer. An integer dtype implies integer; the
    categorical columns take neither key."""
    from polars_rap.cli.template import template_text

    text = template_text({"childs": pl.Float64, "hours": pl.Float32, "age": pl.Int64, "smoker": pl.Boolean,
                          "sex": pl.String, "region": pl.Enum(["a", "b"])}, "people.parquet")
    for name in ("childs", "hours"):
        lines = table_lines(text, name)
        assert any(line.startswith("# integer = true ") and "whole number" in line for line in lines)
        assert any(line.startswith('# scale = "log" ') and '"sqrt"' in line for line in lines)
    age = table_lines(text, "age")
    assert not any("integer" in line for line in age) and any(line.startswith('# scale = "log"') for line in age)
    for name in ("smoker", "sex", "region"):
        assert not any("integer" in line or "scale" in line for line in table_lines(text, name))


def test_a_template_with_its_integer_and_scale_lines_uncommented_is_read(people, tmp_path):
    """The commented keys are real ones with allowed values: uncommenting them gives a config
    that read_config accepts and that declares the column integer and on a log scale."""
    frame, path = people
    spec = tmp_path / "spec.toml"
    assert init(path, spec)[0] == 0
    text = (spec.read_text()
            .replace('bounds = ["TODO", "TODO"]', "bounds = [0, 100]", 1)
            .replace('bounds = ["TODO", "TODO"]', "bounds = [0, 10000]", 1)
            .replace('categories = ["TODO"]', 'categories = ["F", "M"]'))
    income = "\n".join(table_lines(text, "income"))
    filled = income.replace("# integer = true", "integer = true").replace('# scale = "log"', 'scale = "log"')
    spec.write_text(text.replace(income, filled))
    config = polars_rap.read_config(spec)
    assert config.domain["income"] == {"bounds": (0, 10000), "integer": True, "scale": "log"}
    spec_income = polars_rap.Domain.from_mapping(frame.schema, config.domain)["income"]
    assert spec_income.is_integer and spec_income.scale == "log"
