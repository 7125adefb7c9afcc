"""OpenDP's AIM peer (issue #20): bench/peers_opendp.py (its venv), bench/peers_opendp_worker.py
(workload, redraws), its wiring into bench/peers.py, mechanisms.py and run.py; and, when the
venv exists (python bench/peers_opendp.py --ensure), one small fit and a timeout."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # bench/ is a folder of the repository, not of the package
    sys.path.insert(0, str(REPO_ROOT))

from bench.peer_frames import worker_module  # noqa: E402
from bench import mechanisms, peers, peers_opendp, run  # noqa: E402


worker = worker_module(peers.OPENDP_WORKER)
from polars_rap.privacy.ledger import rho_from_epsilon_delta  # noqa: E402

needs_opendp_venv = pytest.mark.skipif(
    not peers_opendp.opendp_env_ready(),
    reason=f"opendp peer venv {peers_opendp.OPENDP_VENV} not built (python bench/peers_opendp.py --ensure)")


# ------------------------------------------------------------------ pure Python, no venv


def test_workload_is_the_smartnoise_peers_pairs_under_the_cell_cap():
    names, sizes = ["a", "b", "c", "d"], [10, 2, 1200, 8]  # c x d: 9,600 cells
    assert worker.pair_workload(names, sizes) == [("a", "b"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]
    assert ("a", "c") not in worker.pair_workload(names, sizes)  # 12,000 cells > 10,000
    assert len(worker.pair_workload(names, sizes, max_cells=10**9)) == 6
    assert worker.pair_workload(names, sizes, degree=3, max_cells=100) == []


def _draw_with_nulls(rate: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    calls = []

    def draw(count: int) -> dict[str, np.ndarray]:
        calls.append(count)
        a = rng.integers(0, 5, count)
        b = rng.integers(0, 3, count)
        a[rng.random(count) < rate] = -1  # a null cell of OpenDP's
        return {"a": a, "b": b}

    return draw, calls


def test_keep_declared_redraws_rows_in_null_cells_to_the_exact_count():
    draw, calls = _draw_with_nulls(0.3)
    codes, dropped = worker.keep_declared(draw, 1000, np.random.default_rng(1))
    assert list(codes) == ["a", "b"] and all(v.shape == (1000,) for v in codes.values())
    assert all((v >= 0).all() and v.dtype == np.int64 for v in codes.values())
    assert calls[0] == 1000 and len(calls) >= 2
    assert 200 < dropped < 600  # about 30% of what was drawn
    assert set(np.unique(codes["a"])) == {0, 1, 2, 3, 4}


def test_keep_declared_returns_a_clean_first_draw_untouched_and_gives_up_when_it_must():
    draw, calls = _draw_with_nulls(0.0)
    codes, dropped = worker.keep_declared(draw, 50, np.random.default_rng(0))
    again, _ = _draw_with_nulls(0.0)
    assert dropped == 0 and calls == [50]
    assert np.array_equal(codes["a"], again(50)["a"])  # same rows, same order
    never, _ = _draw_with_nulls(1.0)
    with pytest.raises(RuntimeError, match="inside the declared domain"):
        worker.keep_declared(never, 10, np.random.default_rng(0), max_draws=3)


def test_venv_request_pins_opendp_and_its_mbi_without_torch(tmp_path):
    request = peers_opendp.requested()
    assert request["step"] == ["opendp[mbi]==0.16.0", "pandas<3"]
    pins = dict(pin.split("==") for pin in request["pins"])
    assert pins["opendp"] == "0.16.0" and pins["mbi"] == "1.1.0"  # opendp's extra pins mbi 1.1.0
    assert not any(name.lower().startswith(("torch", "nvidia")) for name in pins)
    assert not peers_opendp.opendp_env_ready(tmp_path / "absent")
    assert peers.OPENDP_VENV == peers_opendp.OPENDP_VENV
    assert set(peers_opendp.OPENDP_MECHANISMS) <= set(peers.MECHANISMS)


def test_run_peer_sends_opendp_runs_to_their_worker_with_the_suites_rho(tmp_path):
    """``/bin/echo`` stands in for the venv's python: it prints the command line it got."""
    frame = pl.DataFrame({"age": [20, 30, 40], "label": [True, False, True]})
    domain = {"age": (17, 90), "label": [False, True]}
    result = peers.run_peer("aim-opendp", frame, domain, epsilon=0.5, delta=1e-6, seed=3, bins=10, rows=3,
                            time_cap_s=30, workdir=tmp_path, python=Path("/bin/echo"))
    assert result.status == "error"  # no synthetic rows came back
    argv = (tmp_path / "worker.stdout").read_text().split()
    assert argv[0] == str(peers.OPENDP_WORKER)
    assert float(argv[argv.index("--rho") + 1]) == rho_from_epsilon_delta(0.5, 1e-6)
    assert argv[argv.index("--mechanism") + 1] == "aim-opendp"
    with pytest.raises(ValueError, match="mechanism must be one of"):
        peers.run_peer("aim-mbi2", frame, domain, 1.0, 1e-6, 0, 10, 3, 30, tmp_path)


def test_suite_plans_aim_opendp_over_the_peer_bins_and_its_companion_follows():
    suite = run.SUITES["headline"]
    mechanisms_ = ("aim-opendp", "aim-opendp-fixed-sampler")
    first = run.plan_runs(suite, ["adult"], mechanisms_, [1.0], [0, 1], 900.0)
    assert {(r["mechanism"], r["parameters"]["bins"]) for r in first} == {
        (m, b) for m in mechanisms_ for b in suite["peer_bins"]}
    assert all(r["parameters"]["time_cap_s"] == 900.0 for r in first)
    assert run.SAME_FIT_AS["aim-opendp-fixed-sampler"] == "aim-opendp"
    later = run.plan_runs(suite, ["adult"], mechanisms_, [1.0], [0, 1], 900.0, {("adult", "aim-opendp"): 20})
    assert {(r["mechanism"], r["parameters"]["bins"]) for r in later if r["seed"] == 1} == {
        ("aim-opendp", 20), ("aim-opendp-fixed-sampler", 20)}
    assert "aim-opendp" not in run.SMARTNOISE_PEERS  # issue #4's targets stay against smartnoise's


def test_mechanism_builds_the_opendp_venv_and_keeps_the_workers_details(monkeypatch):
    import types

    train = pl.DataFrame({"age": [20, 30, 40, 50], "label": [True, False, True, False]})
    built = []

    class Result:
        status, seconds, peak_rss_mib, message, bins, fit_seconds = "ok", 3.0, 200.0, "", 10, 2.0
        data, fixed_data = train.reverse(), train
        details = {"rho": 0.01, "rho_charged": 0.01, "rows_redrawn": {"shipped": 1, "fixed": 0}}

    monkeypatch.setattr(peers, "ensure_peer_env", lambda: built.append("smartnoise"))
    monkeypatch.setattr(peers, "ensure_opendp_env", lambda: built.append("opendp"))
    module = types.ModuleType("bench.peers")
    module.ensure_env_for = peers.ensure_env_for  # the real choice of venv, over the stubs above
    module.run_peer = lambda *args, **kwargs: Result()
    monkeypatch.setitem(sys.modules, "bench.peers", module)
    result = mechanisms.MECHANISMS["aim-opendp"](train, {"age": (17, 90), "label": [False, True]}, ["label"],
                                                 1.0, 1e-6, 0, {"bins": 10, "time_cap_s": 60.0})
    assert built == ["opendp"]
    assert result.status == "ok" and result.parameters["rho_charged"] == 0.01 and result.parameters["bins"] == 10
    companion = result.companions["aim-opendp-fixed-sampler"]
    assert companion.data.equals(train) and "same fit" in companion.message


# ------------------------------------------------------------------ in the venv


def _small(task, rows: int = 1000):
    columns = ["AGEP", "SEX", "MAR", "SCHL", "PINCP_gt_50000"]
    return task.frame.head(rows).select(columns), {c: task.domain[c] for c in columns}


@needs_opendp_venv
def test_aim_opendp_end_to_end_on_the_bundled_task(task, tmp_path):
    train, domain = _small(task)
    epsilon, delta = 1.0, 1 / train.height**2
    result = peers.run_peer("aim-opendp", train, domain, epsilon=epsilon, delta=delta, seed=0, bins=10,
                            rows=700, time_cap_s=600, workdir=tmp_path, also_fixed_sampler=True)
    assert result.status == "ok", result.message
    for data in (result.data, result.fixed_data):
        assert data.height == 700 and data.schema == train.schema and data.null_count().sum_horizontal()[0] == 0
        assert data["AGEP"].min() >= 17 and data["AGEP"].max() <= 99
        assert set(data["SCHL"].to_list()) <= set(domain["SCHL"])
    details = result.details
    rho = rho_from_epsilon_delta(epsilon, delta)
    assert details["rho"] == rho and details["rho_charged"] <= rho and details["rho_charged"] > 0.999 * rho
    assert details["epsilon_opendp"] <= epsilon and details["delta_opendp"] == pytest.approx(delta)
    assert details["workload_pairs"] == 10
    assert result.seconds > 0 and result.peak_rss_mib > 0
    assert {c for clique in result.cliques for c in clique} <= set(train.columns)


@needs_opendp_venv
def test_aim_opendp_timeout_kills_the_worker(task, tmp_path):
    train, domain = _small(task, 500)
    started = time.perf_counter()
    result = peers.run_peer("aim-opendp", train, domain, epsilon=1.0, delta=1e-6, seed=0, bins=10, rows=100,
                            time_cap_s=1.0, workdir=tmp_path)
    assert result.status == "timeout" and result.data is None
    assert time.perf_counter() - started < 30
    for pid in (p for p in os.listdir("/proc") if p.isdigit()):
        try:
            if "peers_opendp_worker" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                assert int(stat[1]) != os.getpid(), f"worker {pid} outlived its cap"
        except OSError:
            continue

