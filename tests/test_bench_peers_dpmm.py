"""dpmm's peers (issue #74): bench/peers_dpmm.py (venv, budget plan, raw columns and back),
bench/peers_dpmm_worker.py's helpers, the wiring into bench/peers.py, mechanisms.py and run.py;
and, when the venv exists (python bench/peers_dpmm.py --ensure), one small fit."""

from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import polars as pl
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench.peer_frames import worker_module  # noqa: E402
from bench import mechanisms, peers, peers_dpmm, run  # noqa: E402


worker = worker_module(peers.DPMM_WORKER)
from polars_rap.privacy.ledger import rho_from_epsilon_delta  # noqa: E402

needs_dpmm_venv = pytest.mark.skipif(
    not peers_dpmm.dpmm_env_ready(),
    reason=f"dpmm peer venv {peers_dpmm.DPMM_VENV} not built (python bench/peers_dpmm.py --ensure)")


# ------------------------------------------------------------------ the budget


@pytest.mark.parametrize("model", ["aim", "mst", "privbayes"])
@pytest.mark.parametrize(("n_columns", "n_numeric"), [(9, 3), (4, 0), (1, 1), (2, 2)])
def test_plan_spends_exactly_rho_under_replace_one(model, n_columns, n_numeric):
    rho = rho_from_epsilon_delta(1.0, 1e-8)
    plan = peers_dpmm.plan_budget(model, rho, n_columns, n_numeric)
    assert plan["rho_binning"] + plan["rho_model"] == pytest.approx(rho, rel=1e-12)
    assert peers_dpmm.replace_one_rho(plan) == pytest.approx(rho, rel=1e-12)
    assert json.loads(json.dumps(plan)) == plan  # what the worker reads
    if n_numeric:
        assert plan["rho_binning"] == pytest.approx(peers_dpmm.BINNING_SHARE * rho)
        # k PrivTrees at ε_bin / k each, add/remove; 2ε under replace-one; ε-DP is ε²/2-zCDP
        each = plan["binning_epsilon"] / n_numeric
        assert n_numeric * (2 * each) ** 2 / 2 == pytest.approx(plan["rho_binning"])
    else:
        assert plan["rho_binning"] == 0 and plan["binning_epsilon"] is None


def test_plan_model_budgets_match_the_replace_one_costs():
    plan = {m: peers_dpmm.plan_budget(m, 0.2, 5, 0)["model"] for m in ("aim", "mst", "privbayes")}
    assert plan["aim"]["rho"] == pytest.approx(0.2 / 2.2) and plan["aim"]["max_model_size"] == 80
    assert plan["mst"]["rho"] == pytest.approx(0.2 * 3 / 8)
    assert plan["mst"]["sigma"] == pytest.approx(math.sqrt(3 / (2 * plan["mst"]["rho"])))  # dpmm's MST σ
    bayes = plan["privbayes"]
    assert bayes["rho_selection"] == pytest.approx(0.1) and bayes["rho"] == pytest.approx(0.05)
    assert bayes["sigma"] == pytest.approx(math.sqrt(1 / (2 * 0.05)))
    # dpmm's selection: ε_i = (epsilon / 2) / d per pick, d - 1 picks, ε_i²/8 each
    each = bayes["epsilon"] / 2 / 5
    assert each == pytest.approx(bayes["selection_epsilon_each"]) and 4 * each**2 / 8 == pytest.approx(0.1)
    assert worker.privbayes_score_scale(bayes["epsilon"] / 2, 5) == pytest.approx(1 / each)


def test_plan_refuses_bad_arguments():
    with pytest.raises(ValueError, match="rho must be"):
        peers_dpmm.plan_budget("aim", 0.0, 3, 1)
    with pytest.raises(ValueError, match="n_numeric"):
        peers_dpmm.plan_budget("aim", 0.1, 3, 4)
    with pytest.raises(ValueError, match="binning_share"):
        peers_dpmm.plan_budget("aim", 0.1, 3, 1, binning_share=1.0)
    with pytest.raises(ValueError, match="model must be"):
        peers_dpmm.plan_budget("gem", 0.1, 3, 1)


# ------------------------------------------------------------------ raw columns and back


def _mixed():
    frame = pl.DataFrame({
        "age": [17, 45, 90, None, 60],
        "wage": [0.5, 120.0, 99.9, 3.25, -4.0],  # -4 lies outside the bounds: clipped
        "sex": pl.Series(["F", "M", "M", None, "F"], dtype=pl.Enum(["F", "M"])),
        "label": [True, False, True, True, False],
        "code": [3, 1, 2, 1, 3],
    })
    domain = {"age": {"bounds": (17, 90), "nullable": True}, "wage": (0.0, 120.0), "sex": ["F", "M", None],
              "label": [False, True], "code": [1, 2, 3]}
    return frame, domain


def test_to_dpmm_uses_the_declared_domain_only():
    frame, domain = _mixed()
    data, dpmm_domain, spec = peers_dpmm.to_dpmm(frame, domain)
    assert data.columns == ["col0", "col0_null", "col1", "col2", "col3", "col4"] == list(dpmm_domain)
    assert dpmm_domain["col0"] == {"lower": 17.0, "upper": 90.0}
    assert dpmm_domain["col0_null"] == {"categories": ["no", "yes"]}
    assert dpmm_domain["col2"] == {"categories": ["k0", "k1", "k2"]}  # F, M, null: all declared
    assert dpmm_domain["col4"] == {"categories": ["k0", "k1", "k2"]}  # 1, 2, 3 as codes, not numbers
    assert data["col0"].to_list() == [17.0, 45.0, 90.0, 17.0, 60.0]  # the null holds the lower bound
    assert data["col0_null"].to_list() == ["no", "no", "no", "yes", "no"]
    assert data["col1"].to_list() == [0.5, 120.0, 99.9, 3.25, 0.0]
    assert data["col2"].to_list() == ["k0", "k1", "k1", "k2", "k0"]
    assert data["col3"].dtype == pl.String and data["col1"].dtype == pl.Float64
    assert spec["n_numeric"] == 2 and spec["n_columns"] == 6
    # the same frame with other values but the same domain: the same dpmm domain
    assert peers_dpmm.to_dpmm(frame.reverse(), domain)[1] == dpmm_domain


def test_from_dpmm_decodes_to_the_original_names_dtypes_and_bounds():
    frame, domain = _mixed()
    data, _, spec = peers_dpmm.to_dpmm(frame, domain)
    back = peers_dpmm.from_dpmm(data, spec)
    assert back.schema == frame.schema
    assert back["age"].to_list() == frame["age"].to_list()
    assert back["sex"].to_list() == frame["sex"].to_list()
    assert back["wage"].to_list() == [0.5, 120.0, 99.9, 3.25, 0.0]
    assert back.select("label", "code").equals(frame.select("label", "code"))
    synthetic = data.with_columns(pl.Series("col0", [16.2, 17.6, 89.5, 33.0, 1e6]),
                                  pl.Series("col0_null", ["no", "no", "no", "no", "yes"]))
    decoded = peers_dpmm.from_dpmm(synthetic, spec)
    assert decoded["age"].to_list() == [17, 18, 90, 33, None]  # clipped, rounded, the flag's null
    with pytest.raises(ValueError, match="outside the declared"):
        peers_dpmm.from_dpmm(data.with_columns(pl.lit("k7").alias("col3")), spec)


def test_to_dpmm_refuses_what_the_domain_does_not_declare():
    frame, domain = _mixed()
    with pytest.raises(ValueError, match="outside its declared categories"):
        peers_dpmm.to_dpmm(frame, {**domain, "code": [1, 2]})
    with pytest.raises(ValueError, match="nulls"):
        peers_dpmm.to_dpmm(frame, {**domain, "age": (17, 90)})


# ------------------------------------------------------------------ the worker's helpers


def test_worker_refuses_constant_columns_and_sets_the_plan_on_dpmms_mechanism():
    assert worker.constant_columns({"a": 1, "b": 2, "c": 0}) == ["a", "c"]
    plan = peers_dpmm.plan_budget("privbayes", 0.1, 4, 1)
    mechanism = types.SimpleNamespace(rho=9.0, sigma=9.0, epsilon=9.0)
    pipeline = types.SimpleNamespace(gen=types.SimpleNamespace(generator=mechanism))
    set_ = worker.apply_budget(pipeline, plan)
    assert (mechanism.rho, mechanism.sigma, mechanism.epsilon) == (
        plan["model"]["rho"], plan["model"]["sigma"], plan["model"]["epsilon"])
    assert set_["rho_set"] == plan["model"]["rho"]
    aim = types.SimpleNamespace(rho=9.0, epsilon=1.0)
    worker.apply_budget(types.SimpleNamespace(gen=types.SimpleNamespace(generator=aim)),
                        peers_dpmm.plan_budget("aim", 0.1, 4, 1))
    assert aim.rho == pytest.approx(0.09 / 2.2) and aim.epsilon == 1.0
    assert set(worker.PIPELINES) == set(peers_dpmm.DPMM_MECHANISMS)


# ------------------------------------------------------------------ wiring


def test_venv_request_pins_dpmm_with_numpy_1_and_no_torch(tmp_path):
    request = peers_dpmm.requested()
    assert request["step"] == ["dpmm==0.1.9", "numpy<2", "pyarrow<17"]
    pins = dict(pin.split("==") for pin in request["pins"])
    assert pins["dpmm"] == "0.1.9" and pins["numpy"].startswith("1.") and int(pins["pyarrow"].split(".")[0]) < 17
    assert not any(name.lower().startswith(("torch", "nvidia", "jax")) for name in pins)
    assert "torch" in peers_dpmm._CHECK
    assert not peers_dpmm.dpmm_env_ready(tmp_path / "absent")
    assert peers.DPMM_VENV == peers_dpmm.DPMM_VENV
    assert set(peers_dpmm.DPMM_MECHANISMS) <= set(peers.MECHANISMS)


def test_run_peer_sends_dpmm_runs_to_their_worker_with_raw_columns_and_the_plan(tmp_path):
    """``/bin/echo`` stands in for the venv's python: it prints the command line it got."""
    frame, domain = _mixed()
    result = peers.run_peer("dpmm-mst", frame, domain, epsilon=0.5, delta=1e-6, seed=3, bins=20, rows=5,
                            time_cap_s=30, workdir=tmp_path, python=Path("/bin/echo"),
                            also_fixed_sampler=True)
    assert result.status == "error"  # no synthetic rows came back
    argv = (tmp_path / "worker.stdout").read_text().split()
    assert argv[0] == str(peers.DPMM_WORKER)
    rho = rho_from_epsilon_delta(0.5, 1e-6)
    assert float(argv[argv.index("--rho") + 1]) == rho
    assert argv[argv.index("--bins") + 1] == "20" and "--also-fixed-out" not in argv
    plan = json.loads(Path(argv[argv.index("--plan") + 1]).read_text())
    assert plan["model_name"] == "mst" and plan["rho"] == rho and plan["n_numeric"] == 2
    data = pl.read_parquet(argv[argv.index("--data") + 1])
    assert data.columns == list(json.loads(Path(argv[argv.index("--domain") + 1]).read_text()))


def test_suite_plans_dpmm_over_the_peer_bins_without_companions():
    suite = run.SUITES["headline"]
    first = run.plan_runs(suite, ["adult"], run.DPMM_PEERS, [1.0], [0, 1], 900.0)
    assert {(r["mechanism"], r["parameters"]["bins"]) for r in first} == {
        (m, b) for m in run.DPMM_PEERS for b in suite["peer_bins"]}
    later = run.plan_runs(suite, ["adult"], ("dpmm-aim",), [1.0], [0, 1], 900.0, {("adult", "dpmm-aim"): 30})
    assert {(r["mechanism"], r["parameters"]["bins"]) for r in later if r["seed"] == 1} == {("dpmm-aim", 30)}
    assert set(run.DPMM_PEERS) <= set(run.ALL_MECHANISMS) and set(run.DPMM_PEERS) <= set(run.MM_PEERS)
    assert "dpmm-aim" in run.AIM_PEERS and not set(run.DPMM_PEERS) & set(run.SAME_FIT_AS.values())


def test_mechanism_builds_the_dpmm_venv_and_has_no_companion(monkeypatch):
    train = pl.DataFrame({"age": [20, 30, 40, 50], "label": [True, False, True, False]})
    built, calls = [], []

    class Result:
        status, seconds, peak_rss_mib, message, bins, fit_seconds = "ok", 3.0, 200.0, "", 10, 2.0
        data, fixed_data = train.reverse(), None
        details = {"rho": 0.01, "rho_binning": 0.001}

    monkeypatch.setattr(peers, "ensure_peer_env", lambda: built.append("smartnoise"))
    monkeypatch.setattr(peers, "ensure_dpmm_env", lambda: built.append("dpmm"))
    module = types.ModuleType("bench.peers")
    module.ensure_env_for = peers.ensure_env_for  # the real choice of venv, over the stubs above
    module.run_peer = lambda *args, **kwargs: calls.append(kwargs) or Result()
    monkeypatch.setitem(sys.modules, "bench.peers", module)
    result = mechanisms.MECHANISMS["dpmm-privbayes"](train, {"age": (17, 90), "label": [False, True]}, ["label"],
                                                     1.0, 1e-6, 0, {"bins": 10, "time_cap_s": 60.0})
    assert built == ["dpmm"] and calls == [{}]
    assert result.status == "ok" and result.companions == {} and result.parameters["rho_binning"] == 0.001
    assert result.peak_rss_mib == 200.0


# ------------------------------------------------------------------ in the venv


@needs_dpmm_venv
def test_dpmm_privbayes_end_to_end_on_the_bundled_task(task, tmp_path):
    columns = ["AGEP", "SEX", "MAR", "SCHL", "PINCP_gt_50000"]
    train, domain = task.frame.head(800).select(columns), {c: task.domain[c] for c in columns}
    epsilon, delta = 1.0, 1 / train.height**2
    result = peers.run_peer("dpmm-privbayes", train, domain, epsilon=epsilon, delta=delta, seed=0, bins=10,
                            rows=500, time_cap_s=600, workdir=tmp_path)
    assert result.status == "ok", result.message
    data = result.data
    assert data.height == 500 and data.schema == train.schema
    assert data["AGEP"].min() >= domain["AGEP"][0] and data["AGEP"].max() <= domain["AGEP"][1]
    assert set(data["SCHL"].drop_nulls().to_list()) <= set(domain["SCHL"])
    details = result.details
    assert details["rho"] == rho_from_epsilon_delta(epsilon, delta) and details["neighbours"] == "replace-one"
    assert details["binning_epsilon_spent"] == pytest.approx(details["binning_epsilon"])
    assert max(details["privtree_bins"].values()) <= 10
    assert result.seconds > 0 and result.peak_rss_mib > 0
