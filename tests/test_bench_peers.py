"""bench/peers.py: binning with the public domain, and (when the peers venv exists) one MST run."""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load(name: str, path: Path):
    """The module at ``path`` loaded from its file as ``name`` (this test reaches bench/ by path,
    as a script would, not as the ``bench`` package)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


peers = _load("bench_peers", BENCH / "peers.py")
PEER_PYTHON = peers.venv_python(peers.PEERS_VENV)
needs_venv = pytest.mark.skipif(not peers.peer_env_ready(),
                                reason=f"peers venv {peers.PEERS_VENV} not built (python bench/peers.py --ensure)")


def _frame() -> tuple[pl.DataFrame, dict]:
    frame = pl.DataFrame({
        "age": pl.Series([17, 18, 50, 99, 120, 0, 33], dtype=pl.Int32),
        "sex": pl.Series(["F", "M", "M", "F", "F", "M", "F"]),
        "esp": pl.Series([1, None, 3, 2, None, 1, 3], dtype=pl.Int16),
        "commute": pl.Series([1.5, None, 200.0, 37.2, 0.0, 1000.0, None], dtype=pl.Float64),
        "minutes": pl.Series([1, 5, None, 200, 199, 100, 2], dtype=pl.Int64),
        "label": pl.Series([True, False, False, True, True, False, True]),
    })
    domain = {
        "age": (17, 99),
        "sex": ["M", "F"],  # declared order, not sorted order
        "esp": [1, 2, 3, None],
        "commute": {"bounds": (1, 200), "nullable": True},
        "minutes": {"bounds": (1, 200), "nullable": True},
        "label": [False, True],
    }
    return frame, domain


def test_bin_codes_follow_the_public_domain():
    frame, domain = _frame()
    codes, spec = peers.bin_for_peers(frame, domain, bins=10)
    assert codes.columns == frame.columns
    assert codes["sex"].to_list() == [1, 0, 0, 1, 1, 0, 1]  # index in ["M", "F"]
    assert codes["esp"].to_list() == [0, 3, 2, 1, 3, 0, 2]  # null -> its own last code
    assert codes["age"].to_list()[:4] == [0, 0, 4, 9]
    assert codes["age"][4] == 9 and codes["age"][5] == 0  # clipped to the bounds first
    assert codes["commute"].to_list() == [0, 10, 9, 1, 0, 9, 10]  # null -> code `bins`
    sizes = {c["name"]: c["n_codes"] for c in spec["columns"]}
    assert sizes == {"age": 10, "sex": 2, "esp": 4, "commute": 11, "minutes": 11, "label": 2}
    for name, size in sizes.items():
        assert codes[name].min() >= 0 and codes[name].max() < size
    import json

    assert json.loads(json.dumps(spec)) == spec  # JSON-able


def test_unbin_round_trip_keeps_names_dtypes_bounds_nulls_and_categories():
    frame, domain = _frame()
    codes, spec = peers.bin_for_peers(frame, domain, bins=7)
    back = peers.unbin(codes, spec, np.random.default_rng(0))
    assert back.columns == frame.columns
    assert back.schema == frame.schema
    assert back["sex"].to_list() == frame["sex"].to_list()
    assert back["esp"].to_list() == frame["esp"].to_list()
    assert back["label"].to_list() == frame["label"].to_list()
    assert back["commute"].is_null().to_list() == frame["commute"].is_null().to_list()
    assert back["minutes"].is_null().to_list() == frame["minutes"].is_null().to_list()
    assert back["age"].min() >= 17 and back["age"].max() <= 99
    assert back["commute"].drop_nulls().min() >= 1 and back["commute"].drop_nulls().max() <= 200
    # decoded values fall in the same bins: re-binning gives the same codes
    again, _ = peers.bin_for_peers(back, domain, bins=7)
    assert again.equals(codes)


def test_unbin_many_random_codes_stay_in_bounds_and_bins():
    frame, domain = _frame()
    _, spec = peers.bin_for_peers(frame, domain, bins=13)
    rng = np.random.default_rng(1)
    codes = pl.DataFrame({c["name"]: rng.integers(0, c["n_codes"], 5000) for c in spec["columns"]})
    back = peers.unbin(codes, spec, rng)
    assert back.schema == frame.schema
    assert back["age"].min() >= 17 and back["age"].max() <= 99
    assert back["minutes"].drop_nulls().min() >= 1 and back["minutes"].drop_nulls().max() <= 200
    again, _ = peers.bin_for_peers(back, domain, bins=13)
    assert again.equals(codes)
    with pytest.raises(ValueError, match="codes outside"):
        peers.unbin(codes.with_columns(pl.lit(99).alias("sex")), spec)


def test_bin_rejects_undeclared_nulls_and_values():
    frame, domain = _frame()
    with pytest.raises(ValueError, match="nulls"):
        peers.bin_for_peers(frame, {**domain, "esp": [1, 2, 3]}, bins=5)
    with pytest.raises(ValueError, match="outside its declared categories"):
        peers.bin_for_peers(frame, {**domain, "sex": ["M"]}, bins=5)


def test_bin_the_bundled_task(task):
    codes, spec = peers.bin_for_peers(task.frame, task.domain, bins=10)
    sizes = {c["name"]: c["n_codes"] for c in spec["columns"]}
    assert sizes["AGEP"] == 10 and sizes["JWMNP"] == 11 and sizes["PINCP_gt_50000"] == 2
    assert sizes["ESP"] == len(task.domain["ESP"])  # 8 categories + null
    back = peers.unbin(codes, spec, 0)
    assert back.schema == task.frame.schema
    assert back["JWMNP"].null_count() == task.frame["JWMNP"].null_count()
    assert back["OCCP"].to_list() == task.frame["OCCP"].to_list()


@needs_venv
def test_mst_end_to_end_on_the_bundled_task(task, tmp_path):
    train = task.frame.head(2000)
    result = peers.run_peer("mst", train, task.domain, epsilon=1.0, delta=1 / 2000**2, seed=0,
                            bins=10, rows=1500, time_cap_s=600, workdir=tmp_path,
                            also_fixed_sampler=True)
    assert result.status == "ok", result.message
    for data in (result.data, result.fixed_data):
        assert data.height == 1500
        assert data.schema == train.schema
        assert data["AGEP"].min() >= 17 and data["AGEP"].max() <= 99
        assert set(data["OCCP"].drop_nulls().to_list()) <= set(task.domain["OCCP"])
    assert result.seconds > 0 and result.peak_rss_mib > 0
    # MST's model is a spanning tree of 2-way marginals, reported with the column names
    assert all(len(clique) == 2 and set(clique) <= set(train.columns) for clique in result.cliques)
    assert len(result.cliques) == train.width - 1
    assert {name for clique in result.cliques for name in clique} == set(train.columns)


_SAMPLER_CHECK = """
import sys, itertools, time
sys.path.insert(0, sys.argv[1])
import numpy as np
from mbi import Dataset, Domain, LinearMeasurement, estimation, marginal_oracles
from peers_worker import sample_model
rng = np.random.default_rng(0)
n = 20000
# a 4-cycle a-b-c-d-a plus e hanging on a: triangulation needs a fill-in edge
a = rng.integers(0, 3, n); b = (a + rng.integers(0, 2, n)) % 4; c = (b + rng.integers(0, 2, n)) % 3
d = (c + a + rng.integers(0, 2, n)) % 4; e = (a * 2 + rng.integers(0, 2, n)) % 5
dom = Domain(["a", "b", "c", "d", "e"], [3, 4, 3, 4, 5])
data = Dataset({"a": a, "b": b, "c": c, "d": d, "e": e}, dom)
cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("a", "e")]
ms = [LinearMeasurement(np.asarray(data.project(cl).datavector(), dtype=float), cl, 1.0) for cl in cliques]
model = estimation.mirror_descent(dom, ms, known_total=float(n), iters=500, marginal_oracle=marginal_oracles.message_passing_stable)
rows = 100000
t = time.perf_counter()
fixed = Dataset(sample_model(model, rows, np.random.default_rng(1)), dom)
print("fixed sampler seconds", round(time.perf_counter() - t, 2))
np.random.seed(0)
shipped = model.synthetic_data(rows=rows)
worst = {"fixed": 0.0, "shipped": 0.0}
for k in (2, 3):
    for cl in itertools.combinations(dom.attrs, k):
        p = np.asarray(model.project(cl).datavector()); p = p / p.sum()
        for name, ds in (("fixed", fixed), ("shipped", shipped)):
            q = np.asarray(ds.project(cl).datavector()); q = q / q.sum()
            worst[name] = max(worst[name], 0.5 * np.abs(p - q).sum())
print("RESULT", worst["fixed"], worst["shipped"])
"""


@needs_venv
def test_fixed_sampler_reproduces_the_model_marginals(tmp_path):
    """Fit an mbi model whose graph needs a fill-in edge (a 4-cycle); the fixed sampler's
    rows match every 2- and 3-way model marginal, mbi 1.1's shipped sampler's do not."""
    import subprocess

    script = tmp_path / "check.py"
    script.write_text(_SAMPLER_CHECK)
    done = subprocess.run([str(PEER_PYTHON), str(script), str(BENCH)], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert done.returncode == 0, done.stderr[-2000:]
    line = [x for x in done.stdout.splitlines() if x.startswith("RESULT")][-1]
    fixed_tv, shipped_tv = map(float, line.split()[1:])
    assert fixed_tv < 0.03, fixed_tv
    assert shipped_tv > 0.1, shipped_tv


@needs_venv
def test_timeout_kills_the_worker_and_leaves_no_zombie(task, tmp_path):
    started = time.perf_counter()
    result = peers.run_peer("aim", task.frame.head(500), task.domain, epsilon=1.0, delta=1e-6, seed=0,
                            bins=10, rows=100, time_cap_s=1.0, workdir=tmp_path)
    assert result.status == "timeout"
    assert result.data is None
    assert time.perf_counter() - started < 30
    # the worker was reaped (os.wait4) and its process group is gone
    children = [p for p in os.listdir("/proc") if p.isdigit()]
    for pid in children:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid():  # ppid
            assert "peers_worker" not in Path(f"/proc/{pid}/cmdline").read_text(errors="replace")
            assert fields[0] != "Z", f"zombie child {pid}"


@pytest.mark.parametrize("rho", [0.0123, 0.5, 3.7])
@pytest.mark.parametrize("reductions", [(), (3,), (1, 2, 9)])
def test_aim_at_the_replace_one_budget_spends_at_most_rho(rho, reductions):
    """smartnoise's AIM loop (aim.py, its budget arithmetic only), run at aim_replace_one_rho(rho)
    with sigma halved at the given rounds: its charges, read under replace-one (a count vector
    moves by sqrt 2, a score by 2 w), add up to at most rho, and to more than 2 rho' (the bound
    is nearly tight)."""
    worker = _load("bench_peers_worker", BENCH / "peers_worker.py")
    budget = worker.aim_replace_one_rho(rho)
    rounds, oneway = 16 * 15, 15  # Adult's 15 columns
    sigma = np.sqrt(rounds / (2 * 0.9 * budget))
    epsilon = np.sqrt(8 * 0.1 * budget / rounds)
    gaussian = [0.5 / sigma**2] * oneway  # add/remove zCDP of each measurement
    selection = []
    used, t = oneway * 0.5 / sigma**2, 0
    while True:
        t += 1
        last = budget - used < 2 * (0.5 / sigma**2 + 1.0 / 8 * epsilon**2)
        if last:
            remaining = budget - used
            sigma, epsilon = np.sqrt(1 / (2 * 0.9 * remaining)), np.sqrt(8 * 0.1 * remaining)
        used += 1.0 / 8 * epsilon**2 + 0.5 / sigma**2
        gaussian.append(0.5 / sigma**2)
        selection.append(epsilon**2 / 8)
        if last:
            break
        if t in reductions:
            sigma, epsilon = sigma / 2, epsilon * 2
    assert math.fsum(gaussian) + math.fsum(selection) == pytest.approx(budget, rel=1e-12)
    replace_one = 2 * math.fsum(gaussian) + 4 * math.fsum(selection)
    assert replace_one <= rho * (1 + 1e-12)
    assert replace_one > 2.0 * budget
