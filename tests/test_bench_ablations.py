"""The generic ablation runner (bench/ablations.py): a change reaches the runs' parameters, on
the datasets it names, beside the default's runs; the table pairs each seed with the default's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import ablations, harness, run  # noqa: E402

ADULT_ATOMS = {column: {"scale": "log", "atoms": [0]} for column in ("capital-gain", "capital-loss")}


def test_a_domain_update_runs_on_the_datasets_it_names_beside_the_default():
    scales = {"domain_updates": {"adult": {"capital-gain": {"scale": "log"}},
                                 "acs-income-CA": {"JWMNP": {"scale": "sqrt"}}}}
    specs = ablations.plan(scales, ablations.DATASETS, (1.0,), (0, 1, 2))
    assert {s["dataset"] for s in specs} == set(ablations.DATASETS) and len(specs) == 12
    atoms = ablations.plan({"domain_updates": {"adult": ADULT_ATOMS}}, ablations.DATASETS, (1.0,), (0,))
    assert [s["dataset"] for s in atoms] == ["adult", "adult"]  # CA has no atom
    default, changed = atoms
    assert default["parameters"] == run.mechanism_parameters(run.SUITES["headline"], "rap++", None, 0.0)
    assert "domain_updates" not in default["parameters"]
    assert changed["parameters"]["domain_updates"] == {"adult": ADULT_ATOMS}
    assert '"atoms":[0]' in harness.canonical_json(changed["parameters"])
    assert "numeric_ks_mean" in ablations.METRICS


def test_strategy_settings_merge_over_the_suites_nested_tables_key_by_key_and_a_public_table_picks_its_mechanism():
    """``"strategy"`` settings (the library's mapping form) merge over the suite's as
    ``bench.run --strategy`` merges them, a nested table (``projection``) key by key."""
    (_, warm), = [ablations.plan({"strategy": {"projection": {"warm_doublings": 2}}}, ["adult"], (1.0,), (0,))]
    assert warm["parameters"]["strategy"] == {"projection": {"warm_doublings": 2}}
    assert warm["parameters"]["synthesize"] == {}
    suite = {**run.SUITES["headline"], "strategy": {"projection": {"warm_doublings": 2}}}
    assert run.mechanism_parameters(suite, "rap++", None, 0.0) == warm["parameters"]
    quick = ablations.parameters({"strategy": {"projection": {"warm_doublings": 2}}})
    assert harness.merged({"projection": {"max_steps": 20}, "rounds": {"LT": 5}}, quick["strategy"]) == {
        "projection": {"max_steps": 20, "warm_doublings": 2}, "rounds": {"LT": 5}}
    (_, paper), = [ablations.plan({"strategy": {"name": "paper"}}, ["adult"], (1.0,), (0,))]
    assert paper["parameters"]["strategy"] == {"name": "paper"} and paper["mechanism"] == "rap++"
    change = {"public": "matched", "public_use": ["margins"]}
    default, public = ablations.plan(change, ["acs-income-CA"], (0.25,), (0,))
    assert (default["mechanism"], public["mechanism"]) == ("rap++", "rap++public")
    assert public["parameters"]["public"] == "matched" and public["parameters"]["public_use"] == ["margins"]


def test_a_change_the_runner_cannot_run_is_refused_naming_what_it_may_hold():
    with pytest.raises(SystemExit, match="it may hold"):
        ablations.check_change({"projection": {"max_steps": 30}})
    with pytest.raises(SystemExit, match="both"):
        ablations.check_change({"public": "matched"})
    with pytest.raises(SystemExit, match="non-empty"):
        ablations.check_change({})


def _row(change, dataset, epsilon, seed, cm, f1):
    return {"dataset": dataset, "mechanism": "rap++", "epsilon": epsilon, "seed": seed, "status": "ok",
            "parameters": harness.canonical_json(ablations.parameters(change)), "CM_mean_error": cm,
            "MM_mean_error": 1.0, "LT_mean_error": 1.0, "numeric_ks_mean": 0.1, "macro_f1": f1, "gb_macro_f1": f1 - 0.1,
            "rf_macro_f1": f1 - 0.2, "seconds": 10.0}


def test_the_table_pairs_each_seed_with_the_defaults_and_keeps_its_notes(tmp_path, monkeypatch):
    monkeypatch.setattr(ablations, "RESULTS", tmp_path)
    change = {"strategy": {"relaxed_rows": 500}}
    out = tmp_path / "ablation_toy.csv"
    for seed, (base, new) in enumerate([(0.4, 0.2), (0.5, 0.6), (0.2, 0.1)]):
        harness.append_row(out, _row(None, "adult", 1.0, seed, base, 0.70))
        harness.append_row(out, _row(change, "adult", 1.0, seed, new, 0.72))
    harness.append_row(out, _row(change, "adult", 5.0, 0, 0.1, 0.8))  # no default there: unpaired
    table = ablations.summary(ablations.paired(harness.read_results(out), change))
    assert table.height == 1
    row = table.row(0, named=True)
    assert row["seeds"] == 3 and row["CM lower"] == 2 and row["dF1"] == pytest.approx(0.02)
    assert row["dGB F1"] == pytest.approx(0.02) and row["GB F1 default"] == pytest.approx(0.6)
    assert row["CM ratio"] == pytest.approx(round((0.5 + 1.2 + 0.5) / 3, 3))
    assert row["CM default"] == pytest.approx(1.1 / 3)
    markdown = ablations.write_table("toy", change)
    markdown.write_text(markdown.read_text() + "\n## What it showed\n\nby hand\n")
    assert ablations.write_table("toy", change).read_text().endswith("## What it showed\n\nby hand\n")


def test_a_run_executes_only_what_is_missing_and_reads_the_default_elsewhere(tmp_path, monkeypatch):
    monkeypatch.setattr(ablations, "RESULTS", tmp_path)
    change = {"strategy": {"relaxed_rows": 500}}
    ran = []

    def execute(spec):
        ran.append((spec["mechanism"], spec["parameters"] == ablations.parameters(None), spec["seed"]))
        return [{**_row(None, spec["dataset"], spec["epsilon"], spec["seed"], 0.1, 0.7),
                 "parameters": harness.canonical_json(spec["parameters"])}]

    monkeypatch.setattr(run, "execute", execute)
    headline = tmp_path / "headline.csv"
    harness.append_row(headline, _row(None, "adult", 1.0, 0, 0.3, 0.7))
    assert ablations.main(["toy", "--change", json.dumps(change), "--datasets", "adult", "--epsilons", "1",
                           "--seeds", "0", "1", "--default-rows", str(headline), "--quiet"]) == 0
    assert ran == [("rap++", False, 0), ("rap++", True, 1), ("rap++", False, 1)]
    ran.clear()
    assert ablations.main(["toy", "--datasets", "adult", "--epsilons", "1", "--seeds", "0", "1",
                           "--default-rows", str(headline), "--quiet"]) == 0  # the change from the CSV
    assert ran == []
    assert "| adult | 1 |" in (tmp_path / "ablation_toy.md").read_text()
