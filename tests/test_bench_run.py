"""The benchmark harness (bench/run.py, bench/mechanisms.py): resuming, the independent
baseline's privacy accounting, the binning of rap-binned, the headline table and the plots.

Only one test synthesizes, through the ``--one`` child path with tiny settings.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench import host, mechanisms, run  # noqa: E402
from polars_rap.privacy.ledger import PrivacyLedger, rho_from_epsilon_delta  # noqa: E402

DOMAIN = {
    "age": (17, 90),
    "hours": {"bounds": (0.0, 100.0), "nullable": True},
    "sex": ["F", "M"],
    "label": [False, True],
}


def _toy_frame(n_rows: int = 400, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    hours = rng.uniform(0, 100, n_rows)
    return pl.DataFrame({
        "age": rng.integers(17, 91, n_rows).astype(np.int32),
        "hours": pl.Series(hours).set(pl.Series(rng.random(n_rows) < 0.1), None),
        "sex": rng.choice(["F", "M"], n_rows),
        "label": rng.random(n_rows) < 0.3,
    }, schema={"age": pl.Int32, "hours": pl.Float64, "sex": pl.String, "label": pl.Boolean})


# ------------------------------------------------------------------ resuming


def test_completed_keys_skip_ok_and_timeout_and_retry_errors(tmp_path):
    out = tmp_path / "results.csv"
    spec = run.plan_runs(run.SUITES["quick"], ["acs-income-CA"], ["rap++", "independent", "mst"],
                         [1.0], [0], 60.0)  # the quick suite's peers have one bins value: no tuning
    assert [s["mechanism"] for s in spec] == ["rap++", "independent", "mst"]
    for item, status in zip(spec, ["ok", "error", "timeout"], strict=True):
        row = {"dataset": item["dataset"], "mechanism": item["mechanism"], "epsilon": item["epsilon"],
               "seed": item["seed"], "parameters": run.canonical_json(item["parameters"]),
               "status": status, "message": 'a "quoted", comma'}
        run.append_row(out, row)
    results = run.read_results(out)
    assert results.height == 3 and results["message"][0] == 'a "quoted", comma'
    done = run.completed_keys(results)
    todo = [s for s in spec if run.run_key(s["dataset"], s["mechanism"], s["parameters"], s["epsilon"], s["seed"]) not in done]
    assert [s["mechanism"] for s in todo] == ["independent"]


def test_a_results_file_from_before_the_tree_models_reads_with_nulls_there(tmp_path):
    """Rows written before issue #74 lack the tree models' F1 columns: they read as Float64
    nulls, and the next appended row rewrites the file under the current header."""
    out = tmp_path / "results.csv"
    new_columns = ["gb_macro_f1", "rf_macro_f1", "real_gb_macro_f1", "real_rf_macro_f1"]
    old_columns = [c for c in run.COLUMNS if c not in new_columns]
    out.write_text(",".join(old_columns) + "\n" + ",".join("ok" if c == "status" else "" for c in old_columns) + "\n")
    results = run.read_results(out)
    assert results.height == 1 and results.select(new_columns).row(0) == (None,) * 4
    assert all(results.schema[c] == pl.Float64 for c in new_columns)
    run.append_row(out, {"status": "ok", "gb_macro_f1": 0.8, "real_rf_macro_f1": 0.7})
    again = run.read_results(out)
    assert again["gb_macro_f1"].to_list() == [None, 0.8] and again["real_rf_macro_f1"].to_list() == [None, 0.7]
    assert list(run.COLUMNS).index("gb_macro_f1") == list(run.COLUMNS).index("real_accuracy") + 1


def _finished(spec: dict, status: str = "ok", score: float | None = None) -> dict:
    """A results row for ``spec`` with every error equal to ``score``."""
    row = {"dataset": spec["dataset"], "mechanism": spec["mechanism"], "epsilon": spec["epsilon"],
           "seed": spec["seed"], "parameters": run.canonical_json(spec["parameters"]), "status": status}
    if score is not None:
        row.update({f"{c}_mean_error": score for c in run.ERROR_CLASSES})
    return row


def _as_results(rows: list[dict]) -> pl.DataFrame:
    frame = pl.DataFrame(rows)
    for column in run.COLUMNS:
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None).alias(column))
    return frame.select(run.COLUMNS).cast({c: pl.Float64 for c in run.FLOAT_COLUMNS} | {"seed": pl.Int64})


def test_headline_plan_tunes_bins_at_one_point_then_runs_the_choice_everywhere():
    suite = run.SUITES["headline"]
    required = {m: run.bins_values(suite, m) for m in run.BINNED}

    def plan(chosen):
        return run.plan_runs(suite, suite["datasets"], run.ALL_MECHANISMS, suite["epsilons"], suite["seeds"],
                             1800.0, chosen)

    first = plan({})
    # before any result: every point for the unbinned five, all bins at the tuning point for the
    # binned ten (rap-binned; smartnoise's AIM, MST and their fixed-sampler rows; OpenDP's AIM and its;
    # dpmm's AIM, MST and PrivBayes)
    assert len(first) == 2 * (3 * 3 * 5 + 10 * 4)
    assert first[0]["epsilon"] == 1.0 and first[0]["seed"] == 0  # the tuning point comes first
    assert {r["parameters"]["bins"] for r in first if r["mechanism"] == "rap-binned"} == {10, 20, 30, 50}
    assert all((r["epsilon"], r["seed"]) == (1.0, 0) for r in first if r["mechanism"] in run.BINNED)
    assert all(r["parameters"]["time_cap_s"] == 1800.0 for r in first if r["mechanism"] in run.PEERS)
    keys = {run.run_key(r["dataset"], r["mechanism"], r["parameters"], r["epsilon"], r["seed"]) for r in first}
    assert len(keys) == len(first)

    # adult's AIM tuning: bins 30 best (by its shipped rows), 50 timed out; 10 not yet finished
    aim = [r for r in first if r["dataset"] == "adult" and r["mechanism"] == "aim"]
    scores = {10: None, 20: 0.05, 30: 0.02, 50: None}
    status = {10: "error", 20: "ok", 30: "ok", 50: "timeout"}
    rows = [_finished(r, status[r["parameters"]["bins"]], scores[r["parameters"]["bins"]]) for r in aim]
    assert ("adult", "aim") not in run.choose_bins(_as_results(rows), required)  # bins 10 still to run
    rows[0] = _finished(aim[0], "ok", 0.03)
    chosen = run.choose_bins(_as_results(rows), required)
    # the companion plans from its parent's choice; AIM at the replace-one budget takes AIM's
    assert chosen == {("adult", "aim"): 30, ("adult", "aim-replace-one"): 30}
    later = [r for r in plan(chosen) if r["mechanism"] in ("aim", "aim-fixed-sampler")
             and (r["epsilon"], r["seed"]) != (1.0, 0)]
    assert len(later) == 2 * 8 and {r["parameters"]["bins"] for r in later} == {30}
    assert {r["dataset"] for r in later} == {"adult"}
    # ... at every point of the grid, the tuning point too, and at no other bins value
    borrowed = [r for r in plan(chosen) if r["mechanism"].startswith("aim-replace-one")]
    assert len(borrowed) == 2 * 9 and {r["parameters"]["bins"] for r in borrowed} == {30}
    assert {(r["dataset"], r["epsilon"], r["seed"]) for r in borrowed} == {
        ("adult", e, s) for e in suite["epsilons"] for s in suite["seeds"]}
    assert not [r for r in first if r["mechanism"].startswith("aim-replace-one")]  # nothing before AIM's choice


def test_choose_bins_compares_only_where_every_value_ran_and_companions_follow():
    spec = {"dataset": "adult", "epsilon": 1.0, "seed": 0}
    rows = []
    for bins, score in ((10, 0.04), (20, 0.01)):
        rows.append(_finished({**spec, "mechanism": "mst", "parameters": {"bins": bins}}, "ok", score))
        companion = 0.001 if bins == 10 else 0.5  # the companion alone would prefer 10
        rows.append(_finished({**spec, "mechanism": "mst-fixed-sampler", "parameters": {"bins": bins}}, "ok", companion))
    # bins 10 also ran at another point, with a tiny error: not comparable, so ignored
    rows.append(_finished({**spec, "epsilon": 5.0, "mechanism": "mst", "parameters": {"bins": 10}}, "ok", 1e-6))
    chosen = run.choose_bins(_as_results(rows))
    assert chosen == {("adult", "mst"): 20, ("adult", "mst-fixed-sampler"): 20}
    table = run.bins_table(_as_results(rows))
    mst = table.filter(pl.col("mechanism") == "mst")
    assert mst["bins"].to_list() == [10, 20] and mst["chosen"].to_list() == [False, True]
    assert mst["score"].to_list() == pytest.approx([0.04, 0.01])
    # all timed out: the fewest bins, so the rest of the grid is still planned (and reported)
    timeouts = [_finished({**spec, "mechanism": "aim", "parameters": {"bins": b}}, "timeout") for b in (10, 20)]
    assert run.choose_bins(_as_results(timeouts)) == {("adult", "aim"): 10, ("adult", "aim-replace-one"): 10}


def test_choose_bins_counts_a_value_that_failed_beside_an_ok_one_as_lost():
    """A bins value whose run failed twice where another value ran ok at the same point is
    finished and lost (the mechanism fails there); one failure is still to retry, and
    failures alone at a point (a broken environment) leave the sweep unfinished."""
    spec = {"dataset": "sdnist-national", "mechanism": "dpmm-mst", "epsilon": 1.0, "seed": 0}
    rows = [_finished({**spec, "parameters": {"bins": 10}}, "ok", 0.03),
            _finished({**spec, "parameters": {"bins": 20}}, "ok", 0.02),
            _finished({**spec, "parameters": {"bins": 50}}, "error")]
    required = {"dpmm-mst": (10, 20, 50)}
    assert run.choose_bins(_as_results(rows), required) == {}
    rows.append(_finished({**spec, "parameters": {"bins": 50}}, "error"))
    assert run.choose_bins(_as_results(rows), required) == {("sdnist-national", "dpmm-mst"): 20}
    broken = [_finished({**spec, "parameters": {"bins": b}}, "error") for b in (10, 20, 50) for _ in range(2)]
    assert run.choose_bins(_as_results(broken), required) == {}


# ------------------------------------------------------------------ independent baseline


def test_independent_spends_exactly_rho_with_the_stated_noise():
    train = _toy_frame()
    epsilon, delta = 1.0, 1.0 / train.height**2
    rho = rho_from_epsilon_delta(epsilon, delta)
    ledger = PrivacyLedger(rho)
    result = mechanisms.independent(train, DOMAIN, ["label"], epsilon, delta, 0, {"bins": 20}, ledger=ledger)
    assert ledger.rho_spent == rho
    assert len(ledger.events) == train.width
    assert all(e.mechanism == "gaussian" for e in ledger.events)
    per_column = rho / train.width
    assert all(math.isclose(e.rho, per_column, rel_tol=1e-12) for e in ledger.events)
    # replace-one: sqrt(2)/n L2 sensitivity, std = sqrt(2)/n / sqrt(2 rho_col) = 1/(n sqrt(rho_col))
    expected_std = 1.0 / (train.height * math.sqrt(per_column))
    assert math.isclose(mechanisms.independent_noise_std(train.height, per_column), expected_std, rel_tol=1e-12)
    assert math.isclose(result.parameters["noise_std"], expected_std, rel_tol=1e-9)
    assert result.parameters["rho_spent"] == result.parameters["rho_budget"] == rho


def test_independent_output_has_names_dtypes_and_public_bounds():
    train = _toy_frame()
    result = mechanisms.independent(train, DOMAIN, ["label"], 5.0, 1e-6, 3, {"bins": 10})
    data = result.data
    assert result.status == "ok"
    assert data.schema == train.schema and data.height == train.height
    assert data["age"].min() >= 17 and data["age"].max() <= 90
    hours = data["hours"].drop_nulls()
    assert hours.min() >= 0.0 and hours.max() <= 100.0
    assert set(data["sex"].unique()) <= {"F", "M"}
    again = mechanisms.independent(train, DOMAIN, ["label"], 5.0, 1e-6, 3, {"bins": 10}).data
    assert again.equals(data)  # same seed, same output


# ------------------------------------------------------------------ rap-binned binning


def test_bin_column_equal_width_clipped_nulls_kept():
    values = pl.Series("x", [0.0, 9.99, 10.0, 99.9, 100.0, -5.0, 200.0, None, float("nan")])
    codes = mechanisms.bin_column(values, 0.0, 100.0, 10)
    assert codes.dtype == pl.Int32
    assert codes.to_list() == [0, 0, 1, 9, 9, 0, 9, None, None]


@pytest.mark.parametrize("bins", [10, 20, 30, 50, 200])
def test_unbin_round_trip_keeps_bins_bounds_and_dtypes(bins):
    train = _toy_frame(n_rows=500, seed=bins)
    binned = mechanisms.bin_frame(train, DOMAIN, bins)
    assert binned.schema["age"] == pl.Int32 and binned.schema["hours"] == pl.Int32
    assert binned["hours"].null_count() == train["hours"].null_count()
    back = mechanisms.unbin_frame(binned, DOMAIN, bins, train.schema, np.random.default_rng(0))
    assert back.schema == train.schema
    assert back["age"].min() >= 17 and back["age"].max() <= 90
    assert back["hours"].drop_nulls().min() >= 0.0 and back["hours"].drop_nulls().max() <= 100.0
    assert back["hours"].is_null().equals(train["hours"].is_null())
    again = mechanisms.bin_frame(back, DOMAIN, bins)
    assert again["hours"].equals(binned["hours"])
    if bins <= 73:  # every age bin holds an integer: an integer draw stays in its bin
        assert again["age"].equals(binned["age"])
    else:  # narrower than a year: the nearest integer, within one bin
        assert (again["age"] - binned["age"]).abs().max() <= 1
    assert back.select("sex", "label").equals(train.select("sex", "label"))


def test_binned_domain_declares_codes_and_null():
    domain = mechanisms.binned_domain(DOMAIN, 5)
    assert domain["age"] == [0, 1, 2, 3, 4]
    assert domain["hours"] == [0, 1, 2, 3, 4, None]
    assert domain["sex"] == ["F", "M"]


def test_rap_binned_returns_task_domain_rows_and_no_binned_relaxed_rows():
    """Its relaxed rows live in the binned domain: handing them on made the harness score them
    against the task domain's queries and fail (every rap-binned row since the relaxed errors)."""
    train = _toy_frame(n_rows=300)
    settings = {"bins": 5, "strategy": {"relaxed_rows": 20, "rounds": {"CM": 2}, "queries_per_round": 2,
                                        "projection": {"max_steps": 5, "max_doublings": 1}}}
    result = mechanisms.rap_binned(train, DOMAIN, ["label"], 5.0, 1e-6, 0, settings)
    assert result.status == "ok" and result.relaxed is None
    assert result.data.schema == train.schema


def test_final_sigma_is_the_end_of_the_default_schedule():
    from polars_rap import ProjectionConfig

    assert mechanisms.final_sigma(ProjectionConfig()) == 8.0 * 2**6


# ------------------------------------------------------------------ table and plots


def _hand_results() -> pl.DataFrame:
    rows = []
    for dataset in ("adult", "acs-income-CA"):
        for epsilon in (0.25, 1.0):
            for seed in (0, 1):
                base = {"dataset": dataset, "epsilon": epsilon, "seed": seed, "real_macro_f1": 0.8}
                rows.append({**base, "mechanism": "rap++", "parameters": "{}", "status": "ok",
                             "CM_mean_error": 0.01 + seed * 0.002, "MM_mean_error": 0.02, "LT_mean_error": 0.03,
                             "macro_f1": 0.70 + seed * 0.02, "seconds": 10.0, "peak_rss_mib": 400.0})
                rows.append({**base, "mechanism": "rap++paper", "parameters": "{}", "status": "ok",
                             "CM_mean_error": 0.013, "MM_mean_error": 0.022, "LT_mean_error": 0.035,
                             "macro_f1": 0.69, "seconds": 11.0, "peak_rss_mib": 400.0})
                rows.append({**base, "mechanism": "rap++fixed-sigma", "parameters": "{}", "status": "ok",
                             "CM_mean_error": 0.012, "MM_mean_error": 0.025, "LT_mean_error": 0.04,
                             "macro_f1": 0.68, "seconds": 9.0, "peak_rss_mib": 390.0})
                for bins, error in ((10, 0.05), (20, 0.02)):
                    rows.append({**base, "mechanism": "rap-binned", "parameters": json.dumps({"bins": bins}),
                                 "status": "ok", "CM_mean_error": error, "MM_mean_error": error,
                                 "LT_mean_error": error, "macro_f1": 0.6, "seconds": 5.0, "peak_rss_mib": 300.0})
                rows.append({**base, "mechanism": "aim", "parameters": json.dumps({"bins": 20}),
                             "status": "timeout" if seed else "ok", "CM_mean_error": 0.005,
                             "MM_mean_error": 0.01, "LT_mean_error": 0.02, "macro_f1": 0.75,
                             "seconds": 1200.0, "peak_rss_mib": 900.0})
                rows.append({**base, "mechanism": "mst", "parameters": json.dumps({"bins": 10}),
                             "status": "error", "message": "bench.peers unavailable"})
    return _as_results(rows)


def test_headline_table_means_over_seeds_and_best_bins():
    table = run.headline_table(_hand_results())
    assert table.columns[:3] == ["dataset", "epsilon", "mechanism"]
    assert table.height == 2 * 2 * 6
    first = table.filter((pl.col("dataset") == "acs-income-CA") & (pl.col("epsilon") == 0.25))
    assert first["mechanism"].to_list() == ["rap++", "rap++paper", "rap-binned (bins=20)", "rap++fixed-sigma",
                                            "aim (bins=20)", "mst"]
    rap = first.row(0, named=True)
    assert math.isclose(rap["CM_mean_error"], 0.011) and math.isclose(rap["macro_f1"], 0.71)
    aim = first.filter(pl.col("mechanism") == "aim (bins=20)").row(0, named=True)
    assert aim["macro_f1"] == 0.75 and aim["runs"] == "1/2 ok (timeout)"
    mst = first.filter(pl.col("mechanism") == "mst").row(0, named=True)
    assert mst["macro_f1"] is None and mst["runs"] == "0/2 ok (error)"
    markdown = run.table_markdown(table, title="hand")
    assert markdown.startswith("# hand") and "| rap-binned (bins=20) |" in markdown
    after_lr = table.columns.index("real_macro_f1")
    assert table.columns[after_lr + 1:after_lr + 3] == ["gb_macro_f1", "real_gb_macro_f1"]


def test_the_seed_spread_is_max_over_min_from_enough_seeds(monkeypatch):
    """rap++'s CM is 0.010 and 0.012 over its two seeds: spread 1.2 once two seeds are enough;
    AIM has one ok seed (the other timed out) and so no spread; a metric that is 0 has none."""
    monkeypatch.setattr(run, "SPREAD_SEEDS", 2)
    table = run.spread_table(_hand_results())
    first = table.filter((pl.col("dataset") == "adult") & (pl.col("epsilon") == 1.0))
    assert first["mechanism"].to_list() == ["rap++", "rap++paper", "rap-binned (bins=20)", "rap++fixed-sigma",
                                            "aim (bins=20)"]  # mst has no ok run
    rap = first.row(0, named=True)
    assert math.isclose(rap["CM"], 0.012 / 0.010) and math.isclose(rap["macro_f1"], 0.72 / 0.70)
    assert rap["MM"] == 1.0 and rap["seeds"] == 2 and rap["gb_macro_f1"] is None
    aim = first.filter(pl.col("mechanism") == "aim (bins=20)").row(0, named=True)
    assert aim["seeds"] == 1 and aim["CM"] is None
    monkeypatch.setattr(run, "SPREAD_SEEDS", 3)
    assert run.spread_table(_hand_results())["CM"].is_null().all()


def test_targets_compare_with_the_best_peer_rows_over_seed_means():
    results = _hand_results()
    # like-for-like AIM (replace-one): its rows stand where smartnoise's shipped fit stands
    results = pl.concat([results, results.filter(pl.col("mechanism") == "aim").with_columns(
        pl.lit("aim-replace-one").alias("mechanism"), pl.lit(3000.0).alias("seconds"))])
    extra = results.filter((pl.col("mechanism") == "aim-replace-one") & (pl.col("seed") == 0)).with_columns(
        pl.lit("aim-replace-one-fixed-sampler").alias("mechanism"), pl.lit(0.004).alias("CM_mean_error"),
        pl.lit(0.008).alias("MM_mean_error"), pl.lit(0.70).alias("macro_f1"), pl.lit(5000.0).alias("seconds"))
    # smartnoise's AIM as shipped (add/remove, 2.2 rho) is only compared in CM_vs_AIM_add_remove
    shipped = extra.with_columns(pl.lit("aim-fixed-sampler").alias("mechanism"), pl.lit(0.001).alias("CM_mean_error"),
                                 pl.lit(0.001).alias("MM_mean_error"), pl.lit(0.99).alias("macro_f1"))
    table = run.targets_table(pl.concat([results, extra, shipped]))
    assert table.height == 8 and set(table["polars_rap"]) == {"rap++", "rap++paper"}  # no rap++mm rows here
    row = table.filter((pl.col("dataset") == "adult") & (pl.col("epsilon") == 1.0)
                       & (pl.col("polars_rap") == "rap++")).row(0, named=True)
    assert row["MM_vs_best_peer"] == pytest.approx(0.02 / 0.008)  # the fixed sampler's MM is the best peer's
    assert row["CM_vs_AIM"] == pytest.approx(0.011 / 0.004)
    assert row["F1_minus_AIM"] == pytest.approx(0.71 - 0.75)  # the shipped row's F1 is AIM's better one
    assert row["LT_vs_AIM"] == pytest.approx(0.03 / 0.02)
    assert row["time_vs_AIM"] == pytest.approx(10.0 / 1200.0)  # against the shipped fit's seconds
    assert row["RSS_vs_AIM"] == pytest.approx(400.0 / 900.0)  # and its peak RSS
    assert row["met"] == "2/6"
    assert row["CM_vs_AIM_add_remove"] == pytest.approx(0.011 / 0.001)
    assert row["AIM_timeouts"] == 1  # seed 1's fit hit the cap: its capped seconds count, as a bound
    alone = run.targets_table(results.filter(~pl.col("mechanism").is_in(run.PEERS)))
    assert alone["met"].to_list() == ["0/0"] * 8 and alone["CM_vs_AIM"].null_count() == 8


def test_a_timed_out_aim_still_bounds_the_time_target():
    results = _hand_results().with_columns(
        pl.when(pl.col("mechanism") == "aim").then(pl.lit("timeout")).otherwise(pl.col("status")).alias("status"))
    row = run.targets_table(results).filter(
        (pl.col("dataset") == "adult") & (pl.col("epsilon") == 1.0) & (pl.col("polars_rap") == "rap++")
    ).row(0, named=True)
    assert row["time_vs_AIM"] == pytest.approx(10.0 / 1200.0) and row["AIM_timeouts"] == 2
    assert row["RSS_vs_AIM"] == pytest.approx(400.0 / 900.0)  # a capped fit's peak: the ratio bounds it
    assert row["CM_vs_AIM"] is None and row["F1_minus_AIM"] is None  # no finished fit: no errors to compare
    assert row["MM_vs_best_peer"] is None and row["LT_vs_AIM"] is None and row["met"] == "2/2"


def test_plots_of_a_csv_other_than_the_suites_own_go_beside_it(tmp_path):
    """The suite's own CSV draws the committed figures; any other (a rerun, a scratch run)
    draws into ``<stem>_plots`` beside itself, never over them."""
    assert run.default_plots_dir("headline", run.RESULTS / "headline.csv") == run.RESULTS / "plots"
    assert run.default_plots_dir("quick", run.RESULTS / "quick.csv") == run.RESULTS / "plots" / "quick"
    assert run.default_plots_dir("headline", tmp_path / "aim.csv") == tmp_path / "aim_plots"
    rerun = run.RESULTS / "rerun_rap.csv"
    assert run.default_plots_dir("headline", rerun) == run.RESULTS / "rerun_rap_plots"


def test_plots_are_written(tmp_path):
    written = run.write_plots(_hand_results(), tmp_path / "plots")
    names = sorted(p.name for p in written)
    assert "annealing_vs_fixed_sigma.png" in names
    for dataset in ("adult", "acs-income-CA"):
        for kind in ("error_vs_epsilon", "f1_vs_epsilon", "f1_vs_runtime"):
            assert f"{kind}_{dataset}.png" in names
    assert all(p.stat().st_size > 1000 and p.read_bytes()[:4] == b"\x89PNG" for p in written)


# ------------------------------------------------------------------ peers (bench/peers.py faked)


class _FakePeerResult:
    def __init__(self, status, data, fixed_data=None):
        self.status, self.data, self.fixed_data = status, data, fixed_data
        self.seconds, self.peak_rss_mib, self.message, self.bins, self.fit_seconds = 2.0, 321.0, "", 20, 1.5


def _fake_peers(monkeypatch, run_peer):
    import types

    module = types.ModuleType("bench.peers")
    module.ensure_env_for = lambda mechanism: None
    module.run_peer = run_peer
    monkeypatch.setitem(sys.modules, "bench.peers", module)


def test_peer_fit_also_gives_the_fixed_sampler_row(monkeypatch):
    train = _toy_frame(50)
    calls = []

    def run_peer(mechanism, train, domain, epsilon, delta, seed, bins, rows, time_cap_s, workdir, **options):
        calls.append((mechanism, bins, rows, time_cap_s, options))
        return _FakePeerResult("ok", train.reverse(), fixed_data=train)

    _fake_peers(monkeypatch, run_peer)
    result = mechanisms.MECHANISMS["aim"](train, DOMAIN, ["label"], 1.0, 1e-6, 0, {"bins": 20, "time_cap_s": 60.0})
    assert calls == [("aim", 20, 50, 60.0, {"also_fixed_sampler": True})]
    assert result.status == "ok" and result.peak_rss_mib == 321.0 and result.data.equals(train.reverse())
    companion = result.companions["aim-fixed-sampler"]
    assert companion.status == "ok" and companion.data.equals(train) and "same fit" in companion.message


def test_peer_timeout_and_missing_module_are_rows_not_gaps(monkeypatch):
    train = _toy_frame(50)
    _fake_peers(monkeypatch, lambda *args, **kwargs: _FakePeerResult("timeout", None))
    result = mechanisms.MECHANISMS["mst"](train, DOMAIN, ["label"], 1.0, 1e-6, 0, {"bins": 10, "time_cap_s": 1.0})
    assert result.status == "timeout" and result.data is None
    assert result.companions["mst-fixed-sampler"].status == "timeout"
    monkeypatch.setitem(sys.modules, "bench.peers", None)  # import fails
    missing = mechanisms.MECHANISMS["mst-fixed-sampler"](train, DOMAIN, ["label"], 1.0, 1e-6, 0,
                                                         {"bins": 10, "time_cap_s": 1.0})
    assert missing.status == "error" and "bench.peers unavailable" in missing.message


# ------------------------------------------------------------------ the --one child path


def test_one_child_runs_tiny_rap_plus_plus_and_reports_a_full_row():
    parameters = {"train_rows": 600, "eval": {"n_mixed_marginals": 50, "n_linear_thresholds": 200},
                  "strategy": {"relaxed_rows": 20, "rounds": {"CM": 2, "LT": 1}, "queries_per_round": 2,
                               "workload": {"n_linear_thresholds": 50},
                               "projection": {"max_steps": 5, "max_doublings": 1}}}
    spec = {"dataset": "acs-income-CA", "mechanism": "rap++", "epsilon": 5.0, "seed": 0, "parameters": parameters}
    done = subprocess.run([sys.executable, "-m", "bench.run", "--one", json.dumps(spec)],
                          capture_output=True, text=True, cwd=REPO_ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(rows) == 1
    row = rows[0]
    assert row["status"] == "ok", row["message"]
    assert set(row) == set(run.COLUMNS)
    assert row["n_train"] == 600 and row["delta"] == 1.0 / 600**2
    assert 0.0 <= row["CM_mean_error"] <= 1.0 and 0.0 <= row["LT_mean_error"] <= 1.0
    assert 0.0 <= row["macro_f1"] <= 1.0 and row["peak_rss_mib"] > 50
    assert 0.0 <= row["numeric_ks_mean"] <= 1.0 and 0.0 <= row["numeric_decile_error"] <= 1.0
    for key in ("gb_macro_f1", "rf_macro_f1", "real_gb_macro_f1", "real_rf_macro_f1"):  # issue #74
        assert 0.0 <= row[key] <= 1.0, key
    assert row["real_gb_macro_f1"] > 0.6 and row["real_rf_macro_f1"] > 0.6  # learned from 600 real rows
    assert json.loads(row["parameters"]) == parameters


def test_git_commit_names_head_and_marks_uncommitted_changes(tmp_path):
    assert host.git_commit(tmp_path) == "unknown"  # not a checkout
    git = ["git", "-C", str(tmp_path), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "results.csv").write_text("a\n1\n")
    subprocess.run([*git, "add", "results.csv"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "scratch.txt").write_text("untracked files do not make a run dirty")
    assert host.git_commit(tmp_path) == head
    (tmp_path / "results.csv").write_text("a\n2\n")
    assert host.git_commit(tmp_path) == head + "-dirty"


def test_git_commit_does_not_count_the_results_a_run_appends(tmp_path):
    """A run appending to bench/results/ (as each seed of a resumable suite does) stays credited
    to the commit it ran; a change to the code beside it does not."""
    git = ["git", "-C", str(tmp_path), "-c", "user.name=bench", "-c", "user.email=bench@example.org"]
    subprocess.run([*git, "init", "-q"], check=True)
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "rows.csv").write_text("a\n1\n")
    (tmp_path / "code.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "bench" / "results" / "rows.csv").write_text("a\n1\n2\n")
    assert host.git_commit(tmp_path) == head
    (tmp_path / "code.py").write_text("x = 2\n")
    assert host.git_commit(tmp_path) == head + "-dirty"


# ------------------------------------------------------------------ reruns (bench/rerun.py)


def test_a_rerun_replaces_only_its_mechanism_at_its_points_and_compares_paired_seeds(tmp_path):
    from bench import rerun

    def row(mechanism, epsilon, seed, error):
        return {"dataset": "adult", "mechanism": mechanism, "epsilon": epsilon, "seed": seed,
                "parameters": "{}", "status": "ok", "CM_mean_error": error, "LT_mean_error": 2 * error}

    suite = tmp_path / "headline.csv"
    for r in [row("rap++", 1.0, 0, 0.4), row("rap++", 1.0, 1, 0.6), row("rap++", 5.0, 0, 0.2),
              row("aim", 1.0, 0, 0.3)]:
        run.append_row(suite, r)
    new_rows = _as_results([row("rap++", 1.0, 0, 0.1), row("rap++", 1.0, 1, 0.3)])
    table = rerun.compare(run.read_results(suite), new_rows, "rap++")
    assert table.height == 1 and table["seeds"].to_list() == [2]
    only = table.row(0, named=True)
    assert math.isclose(only["CM_mean_error old"], 0.5) and math.isclose(only["CM_mean_error new"], 0.2)
    assert only["LT_mean_error new/old"] == 0.4
    assert rerun.splice(suite, new_rows, "rap++") == 2
    after = run.read_results(suite).sort("mechanism", "epsilon", "seed")
    assert after.select("mechanism", "epsilon", "seed", "CM_mean_error").rows() == [
        ("aim", 1.0, 0, 0.3), ("rap++", 1.0, 0, 0.1), ("rap++", 1.0, 1, 0.3), ("rap++", 5.0, 0, 0.2)]


def test_a_rerun_compares_a_binned_peer_per_bins_value(tmp_path):
    """At the suite's tuning point a binned peer holds a row per bins value tried: the chosen
    value's seeds are compared among themselves, never averaged with the values it beat."""
    from bench import rerun

    def row(bins, seed, error):
        return {"dataset": "adult", "mechanism": "mst", "epsilon": 1.0, "seed": seed,
                "parameters": json.dumps({"bins": bins}), "status": "ok", "CM_mean_error": error}

    old = [row(10, 0, 0.9), row(50, 0, 0.4), row(50, 1, 0.6)]
    new = [row(10, 0, 0.7), row(50, 0, 0.1), row(50, 1, 0.3)]
    table = rerun.compare(_as_results(old), _as_results(new), "mst")
    assert table.select("bins", "seeds").rows() == [(10, 1), (50, 2)]
    chosen = table.row(1, named=True)
    assert math.isclose(chosen["CM_mean_error old"], 0.5) and math.isclose(chosen["CM_mean_error new"], 0.2)


def test_a_rerun_can_take_only_some_datasets_rows(tmp_path):
    from bench import rerun

    def row(dataset, error):
        return {"dataset": dataset, "mechanism": "mst", "epsilon": 1.0, "seed": 0, "parameters": "{}",
                "status": "ok", "CM_mean_error": error}

    suite, new = tmp_path / "headline.csv", tmp_path / "rerun.csv"
    for r in [row("adult", 0.4), row("acs-income-CA", 0.6)]:
        run.append_row(suite, r)
    for r in [row("adult", 0.1), row("acs-income-CA", 0.2)]:
        run.append_row(new, r)
    note = tmp_path / "note.md"
    assert rerun.main(["--suite-csv", str(suite), "--new", str(new), "--mechanism", "mst", "--why", "test",
                       "--note", str(note), "--datasets", "adult"]) == 0
    after = dict(run.read_results(suite).select("dataset", "CM_mean_error").rows())
    assert after == {"adult": 0.1, "acs-income-CA": 0.6}
    assert "acs-income-CA" not in note.read_text()


# ------------------------------------------------------------------ the public tables (bench/mechanisms.py)


def test_the_benchmarks_public_tables_take_the_task_preprocessing_and_fit_its_domain(acs_state_folder, task):
    from polars_rap.public.prior import open_public, read_public
    from polars_rap.schema.domain import Domain

    mechanisms._public_frame.cache_clear()
    domain = Domain.from_mapping(task.frame.schema, task.domain, task.labels)
    matched = mechanisms.public_table("matched", task.frame.columns)
    mismatched = mechanisms.public_table("mismatched", task.frame.columns)
    mechanisms._public_frame.cache_clear()
    assert matched.height == 50 and mismatched.height == 20  # every state but CA; PR alone
    assert matched.columns == task.frame.columns and matched.schema == task.frame.schema
    assert read_public(open_public(matched, task.domain, task.frame.columns), domain).filled_columns == ()
