"""The README's quickstarts run as written, from an empty directory (issue 16).

Their code blocks are taken from the README itself, in order: each ``polars-rap`` command of a
``bash`` block runs through the command line's entry point (the ``polars-rap`` script that
pyproject.toml declares, called in this process), each ``python`` block is executed in one
namespace. Only the defaults of the loop's settings are made small (fewer relaxed rows, rounds,
workload queries and Adam steps: the keyword-only defaults of every strategy class, which a run
the README shows resolves its strategy to), so that the code shown is the code that runs, in
seconds.

Only the package's public names are used here (``polars_rap.__all__``), so that the test follows
the README and not the modules' layout.
"""

import importlib
import json
import re
import shlex
import tomllib
from pathlib import Path

import polars as pl

import polars_rap

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
SMALL_LOOP = dict(relaxed_rows=40, rounds={"LT": 2},
                  workload=polars_rap.WorkloadSize(n_linear_thresholds=100, n_mixed_marginals=20),
                  projection=polars_rap.ProjectionConfig(max_steps=3))
"""The loop settings every strategy takes by default here (a README run's own settings win)."""
ADULT_ROWS = 48_842


def section_blocks(heading: str) -> list[tuple[str, str]]:
    """(language, code) of each fenced block in the README section ``## heading``, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def shell_commands(code: str) -> list[list[str]]:
    """The words of each command of a bash block (a trailing backslash continues a line)."""
    commands = []
    for line in code.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words:
            commands.append(words)
    return commands


def polars_rap_command():
    """The ``polars-rap`` script as pyproject.toml declares it (``module:function``)."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]
    module, _, function = scripts["polars-rap"].partition(":")
    return getattr(importlib.import_module(module), function)


def run_shell_block(code: str) -> None:
    main = polars_rap_command()
    for words in shell_commands(code):
        assert words[0] == "polars-rap", words
        assert main(words[1:]) == 0, words


def small_defaults(monkeypatch) -> None:
    """Small loop settings for every run, the command line's included: the default strategy
    (``"planned"``), a config's ``[strategy]`` table and a strategy object made in the README's
    code are all made by the strategy classes, whose loop settings are keyword-only fields, so
    their ``__init__``'s keyword defaults are the settings a run that does not set them gets
    (restored after the test). ``synthesize`` shows no progress bar."""
    for strategy in (polars_rap.PlannedStrategy, polars_rap.PaperStrategy):
        monkeypatch.setattr(strategy.__init__, "__kwdefaults__", {**strategy.__init__.__kwdefaults__, **SMALL_LOOP})
    synthesize = polars_rap.synthesize
    monkeypatch.setattr(synthesize, "__kwdefaults__", {**synthesize.__kwdefaults__, "progress": False})


def test_the_quickstart_has_a_shell_step_and_python_steps_without_elisions():
    blocks = section_blocks("Quickstart")
    assert [language for language, _ in blocks] == ["bash", "python", "python"]
    assert not any(re.search(r"[\[{(,]\s*\.\.\.", code) for _, code in blocks)  # no "..." for the domain


def test_the_quickstart_runs_as_written_in_an_empty_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    small_defaults(monkeypatch)
    namespace: dict = {}
    for language, code in section_blocks("Quickstart"):
        if language == "bash":
            run_shell_block(code)
        else:
            exec(compile(code, f"README.md quickstart ({language})", "exec"), namespace)
            for shown in re.findall(r"^res +# (.*)\.\.\.\)$", code, flags=re.M):  # the repr quoted beside res
                assert repr(namespace["res"]).startswith(shown), (repr(namespace["res"]), shown)
            if "minority_women" in namespace and "first" not in namespace:  # the first block's result
                namespace["first"] = namespace["res"]
    first, women = namespace["first"], namespace["minority_women"]
    for frame in (first.data, women):  # the constraint holds on every row, conditioned ones too
        assert frame.filter((pl.col("age") < 18) & (pl.col("hours-per-week") > 40)).height == 0
    assert women.height == 1_000 and (women["sex"] == "Female").all()
    result = namespace["res"]
    assert isinstance(result, polars_rap.SynthesisResult)
    assert result.report.parameters["relaxed_rows"] == 40  # the small loop ran
    assert result.data.height == ADULT_ROWS and result.data.width == 15  # the second block: every column
    assert (tmp_path / "adult-model" / "manifest.json").is_file()
    assert repr(namespace["config"].domain["race"]) == repr(
        ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"])


def test_the_command_line_quickstart_runs_as_written_in_an_empty_directory(tmp_path, monkeypatch, capsys):
    blocks = section_blocks("Command-line quickstart")
    assert [language for language, _ in blocks] == ["bash"]
    commands = shell_commands(blocks[0][1])
    assert [words[1] for words in commands] == ["export", "synthesize", "sample", "sample", "report"]

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    small_defaults(monkeypatch)
    main = polars_rap_command()
    for words in commands:
        capsys.readouterr()  # each command's own output below
        assert main(words[1:]) == 0, words
    summary = json.loads(capsys.readouterr().out)  # report --json: the saved report's summary, as JSON
    assert summary["epsilon"] == 1.0 and summary["delta"] == 1e-9

    synthetic = pl.read_parquet(tmp_path / "synthetic.parquet")
    real = pl.read_parquet(tmp_path / "adult.parquet")
    assert synthetic.height == ADULT_ROWS and synthetic.schema == real.schema
    assert pl.read_parquet(tmp_path / "more.parquet").height == 10_000
    women = pl.read_parquet(tmp_path / "women.parquet")  # sample --where: every row under the condition
    assert women.height == 1_000 and (women["sex"] == "Female").all() and women["age"].min() >= 40
    model = polars_rap.load(tmp_path / "adult-model")
    assert model.report.epsilon == 1.0 and model.report.delta == 1e-9
    assert model.report.parameters["relaxed_rows"] == 40  # the small loop ran
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8")) == summary
