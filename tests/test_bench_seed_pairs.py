"""bench.seed_pairs: each seed's candidate run against the default's run of the same pair of
sources, by dataset, ε and seed."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import polars as pl
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import run, seed_pairs  # noqa: E402


def _rows(points, strategy, cm, f1, mechanism="rap++", **synthesize) -> pl.DataFrame:
    """Result rows in the harness's columns and dtypes (those not given are null); ``synthesize``:
    keywords beside the strategy."""
    parameters = json.dumps({"synthesize": {**({"strategy": strategy} if strategy else {}), **synthesize}})
    given = [{"dataset": d, "epsilon": e, "seed": s, "mechanism": mechanism, "status": "ok",
              "parameters": parameters, "CM_mean_error": cm * (1 + s), "MM_mean_error": 2 * cm,
              "LT_mean_error": 3 * cm, "numeric_ks_mean": 4 * cm, "macro_f1": f1} for d, e, s in points]
    schema = run.read_results(Path("absent.csv")).schema
    return pl.DataFrame([{c: row.get(c) for c in run.COLUMNS} for row in given], schema=schema)


def test_pairs_join_each_seed_to_its_own_default_and_ratio_the_metrics(tmp_path) -> None:
    """Seeds 0-1 pair the first sources, seed 2 the second; rows of another strategy or
    mechanism, or a point the other side lacks, stay out; ratios and dF1 per seed."""
    step = {"name": "planned", "base_share": 0.2, "base_from": "CM"}
    first = [("adult", 1.0, 0), ("adult", 1.0, 1)]
    run.write_results(tmp_path / "step.csv", pl.concat([
        _rows(first + [("adult", 1.0, 2)], step, cm=0.2, f1=0.76),
        _rows(first, {"name": "planned", "base_share": 0.3}, cm=9.0, f1=0.0)]))
    run.write_results(tmp_path / "default.csv", pl.concat([
        _rows(first + [("adult", 5.0, 0)], None, cm=0.1, f1=0.75),
        _rows(first, None, cm=7.0, f1=0.0, mechanism="aim")]))
    run.write_results(tmp_path / "later.csv", _rows([("adult", 1.0, 2)], None, cm=0.4, f1=0.80))
    keep = seed_pairs._base_from_cm
    comparison = seed_pairs.Comparison(
        title="t", why="w", out="o.md",
        pairs=((seed_pairs.Source("step.csv", keep), seed_pairs.Source("default.csv", seed_pairs._default)),
               (seed_pairs.Source("step.csv", keep), seed_pairs.Source("later.csv", seed_pairs._default))))
    frame = comparison.frame(tmp_path)
    assert frame.select("dataset", "epsilon", "seed").rows() == [("adult", 1.0, seed) for seed in (0, 1, 2)]
    assert frame["CM_ratio"].to_list() == [2.0, 2.0, 0.5] and frame["MM_ratio"].to_list() == [2.0, 2.0, 0.5]
    assert frame["dF1"].to_list() == pytest.approx([0.01, 0.01, -0.04])
    means = seed_pairs.means(frame)
    assert means["seeds"].to_list() == [3] and means["CM_lower"].to_list() == [1] and means["F1_lower"].to_list() == [1]
    assert means["CM_ratio"].to_list() == [1.5]


def test_a_synthesize_keyword_step_is_told_from_the_default(tmp_path) -> None:
    """A step that changes a ``synthesize`` keyword (not the strategy) keeps its rows, and
    the default's side keeps only rows with no keywords at all."""
    points = [("acs-income-CA", 0.25, 3)]
    run.write_results(tmp_path / "both.csv", pl.concat([
        _rows(points, None, cm=0.3, f1=0.74, rounds_lt=10), _rows(points, None, cm=0.2, f1=0.75),
        _rows(points, None, cm=9.0, f1=0.0, rounds_lt=0)]))
    comparison = seed_pairs.Comparison(
        title="t", why="w", out="o.md",
        pairs=((seed_pairs.Source("both.csv", seed_pairs._lt_rounds_10),
                seed_pairs.Source("both.csv", seed_pairs._default)),))
    frame = comparison.frame(tmp_path)
    assert frame["CM_ratio"].to_list() == [1.5] and frame["dF1"].to_list() == pytest.approx([-0.01])
