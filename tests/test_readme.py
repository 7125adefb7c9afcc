"""The README's quickstart runs as written, from an empty directory (issue 16).

Its code blocks are taken from the README itself, in order: each ``polars-rap`` line of a
``bash`` block runs through :func:`polars_rap.cli.main`, each ``python`` block is executed in
one namespace. Only the defaults of ``synthesize`` are made small (fewer relaxed rows, rounds
and Adam steps), so that the code shown is the code that runs, in seconds.
"""

import re
import shlex
from pathlib import Path

import polars_rap
from polars_rap import cli
from polars_rap.mechanism import synthesize

README = Path(__file__).resolve().parents[1] / "README.md"
SMALL_DEFAULTS = dict(relaxed_rows=40, rounds_lt=2, n_linear_thresholds=100, n_mixed_marginals=20,
                      projection=polars_rap.ProjectionConfig(max_steps=3), progress=False)


def quickstart_blocks() -> list[tuple[str, str]]:
    """(language, code) of each fenced block in the README's Quickstart section, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S)


def test_the_quickstart_has_a_shell_step_and_python_steps_without_elisions():
    blocks = quickstart_blocks()
    assert [language for language, _ in blocks] == ["bash", "python", "python"]
    assert not any(re.search(r"[\[{(,]\s*\.\.\.", code) for _, code in blocks)  # no "..." for the domain


def test_the_quickstart_runs_as_written_in_an_empty_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("POLARS_RAP_DATA_DIR", raising=False)
    monkeypatch.setattr(synthesize, "__kwdefaults__", {**synthesize.__kwdefaults__, **SMALL_DEFAULTS})
    namespace: dict = {}
    for language, code in quickstart_blocks():
        if language == "bash":
            for line in code.splitlines():
                words = shlex.split(line, comments=True)
                if words:
                    assert words[0] == "polars-rap", line
                    assert cli.main(words[1:]) == 0, line
        else:
            exec(compile(code, f"README.md quickstart ({language})", "exec"), namespace)
            for shown in re.findall(r"^res +# (.*)\.\.\.\)$", code, flags=re.M):  # the repr quoted beside res
                assert repr(namespace["res"]).startswith(shown), (repr(namespace["res"]), shown)
    result = namespace["res"]
    assert isinstance(result, polars_rap.SynthesisResult)
    assert result.data.height == 48_842 and result.data.width == 15  # the second block: every column
    assert (tmp_path / "adult-model" / "manifest.json").is_file()
    assert repr(namespace["config"].domain["race"]) == repr(
        ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"])
