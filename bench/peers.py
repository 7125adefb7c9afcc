"""Peer mechanisms AIM and MST (smartnoise-synth 1.0.8) run from the bench harness (issue #4).

The peers live in their own virtual environment (``bench/.venv-peers``, or the folder named by
``$POLARS_RAP_PEERS_VENV``) built by :func:`ensure_peer_env` with the lean, PyTorch-free install
of benchmarks.md ("Peers"), and run in a subprocess (``bench/peers_worker.py``) so that the
project's own environment never imports smartnoise, mbi or JAX.

Both peers need small integer codes, so :func:`bin_for_peers` codes every column with the
PUBLIC domain only (category lists; equal-width bins over the declared numeric bounds; nulls
as an extra code when declared) and :func:`unbin` decodes the synthetic codes back to the
original names, order and dtypes. The worker declares those code counts to mbi itself, so
nothing about the domain is read off the training rows and no budget goes to preprocessing.

    from bench.peers import run_peer          # or: sys.path.insert(0, "bench"); import peers
    result = run_peer("mst", train, task.domain, epsilon=1.0, delta=1 / train.height**2,
                      seed=0, bins=10, rows=train.height, time_cap_s=900, workdir=Path("tmp"))
    result.status, result.seconds, result.peak_rss_mib, result.data

``mechanism`` is ``"aim"``, ``"mst"`` (sampled with mbi 1.x's own ``synthetic_data``, as
shipped) or ``"aim-fixed-sampler"`` / ``"mst-fixed-sampler"`` (the same fitted model sampled
column by column from exact conditionals along the junction tree; see the worker).
``"aim-replace-one"`` (and its fixed-sampler row) is smartnoise's AIM at the add/remove budget
that makes it ρ-zCDP under polars-rap's replace-one neighbours (the shipped ``"aim"``
calibrates its noise and selections to add/remove neighbours, and so spends 2.2 ρ in those terms).
``"aim-opendp"`` / ``"aim-opendp-fixed-sampler"`` are OpenDP's AIM (``opendp.extras.mbi``),
with their own venv and worker (``bench/peers_opendp.py``, ``bench/peers_opendp_worker.py``)
and the same binned codes. ``"dpmm-aim"``, ``"dpmm-mst"`` and ``"dpmm-privbayes"`` are dpmm 0.1.9's
pipelines (``bench/peers_dpmm.py``, ``bench/peers_dpmm_worker.py``): they get the RAW columns with
the public domain and bin numeric columns themselves with PrivTree, which spends a share of ρ;
the whole fit is ρ-zCDP under replace-one (see ``bench/peers_dpmm.py``). ``bins`` is then
PrivTree's most bins per numeric column.

    python bench/peers.py --ensure                       # build / check the venv only
    python -m bench.run --suite quick --mechanisms mst   # one scored run through the harness
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rap.schema.domain import Domain

try:
    from bench.peers_dpmm import DPMM_MECHANISMS, DPMM_VENV, ensure_dpmm_env, from_dpmm, plan_budget, to_dpmm
    from bench.peers_opendp import OPENDP_MECHANISMS, OPENDP_VENV, ensure_opendp_env, opendp_env_ready
    from bench.venvs import build_venv, ensure_command, venv_python, venv_ready
    from bench.peer_frames import dtype_from, dtype_name
except ImportError:  # run as a script (python bench/peers.py) or loaded from its file path
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from peers_dpmm import DPMM_MECHANISMS, DPMM_VENV, ensure_dpmm_env, from_dpmm, plan_budget, to_dpmm
    from peers_opendp import OPENDP_MECHANISMS, OPENDP_VENV, ensure_opendp_env, opendp_env_ready
    from venvs import build_venv, ensure_command, venv_python, venv_ready
    from peer_frames import dtype_from, dtype_name

BENCH = Path(__file__).resolve().parent
WORKER = BENCH / "peers_worker.py"
OPENDP_WORKER = BENCH / "peers_opendp_worker.py"
DPMM_WORKER = BENCH / "peers_dpmm_worker.py"
PEERS_VENV = Path(os.environ.get("POLARS_RAP_PEERS_VENV", BENCH / ".venv-peers"))
SMARTNOISE_MECHANISMS = ("aim", "mst", "aim-fixed-sampler", "mst-fixed-sampler",
                         "aim-replace-one", "aim-replace-one-fixed-sampler")
MECHANISMS = (*SMARTNOISE_MECHANISMS, *OPENDP_MECHANISMS, *DPMM_MECHANISMS)
__all__ = ["DPMM_VENV", "MECHANISMS", "OPENDP_VENV", "PEERS_VENV", "PeerResult", "bin_for_peers", "ensure_dpmm_env",
           "ensure_env_for", "ensure_opendp_env", "ensure_peer_env", "opendp_env_ready", "peer_env_ready", "run_peer",
           "unbin"]

# The lean install of benchmarks.md ("Peers"): smartnoise-synth without its CUDA PyTorch
# dependencies, then only what AIM and MST really import.
_STEP_NO_DEPS = ["smartnoise-synth==1.0.8"]
_STEP_DEPS = ["mbi<2", "smartnoise-sql", "opendp", "faker", "disjoint-set", "pac-synth",
              "pandas<3", "numpy", "scipy", "pyarrow", "scikit-learn"]
_PINS = [  # what the lean set resolved to on 2026-11-22 (Python 3.11); pip -c constraints
    "absl-py==2.5.1", "antlr4-python3-runtime==4.9.3", "attrs==26.1.0", "chex==0.1.92",
    "cloudpickle==3.1.2", "Deprecated==1.3.1", "disjoint-set==0.9.0", "Faker==40.54.0",
    "graphviz==0.21", "jax==0.10.2", "jaxlib==0.10.2", "joblib==1.6.0", "mbi==1.1.0",
    "ml_dtypes==0.6.0", "narwhals==2.29.0", "networkx==3.6.1", "numpy==2.4.6", "opendp==0.14.2",
    "opt_einsum==3.4.0", "optax==0.2.8", "pac-synth==0.0.8", "pandas==2.3.3", "pyarrow==26.0.1",
    "python-dateutil==4.0.0", "pytz==2026.6", "PyYAML==6.0.3", "scikit-learn==1.9.1",
    "scipy==1.17.1", "smartnoise-sql==1.0.10", "smartnoise-synth==1.0.8", "SQLAlchemy==2.1.9",
    "threadpoolctl==3.8.0", "toolz==1.2.0", "typing_extensions==4.16.0", "tzdata==2026.6",
    "wrapt==2.5.2",
]
_MARKER = "polars-rap-peers.json"


def _requested() -> dict:
    return {"no_deps": _STEP_NO_DEPS, "deps": _STEP_DEPS, "pins": _PINS,
            "python": ".".join(map(str, sys.version_info[:2]))}


_CHECK = ("import sys\nfrom snsynth.mst.mst import MSTSynthesizer\n"
          "from snsynth.aim.aim import AIMSynthesizer\n"
          "assert 'torch' not in sys.modules, 'smartnoise imported torch'\nprint('ok')")


def peer_env_ready(venv: Path | None = None) -> bool:
    """True when the venv exists and its marker says it holds the requested install."""
    return venv_ready(Path(venv or PEERS_VENV), _MARKER, _requested())


def ensure_peer_env(venv: Path | None = None) -> Path:
    """Create (if missing) the peers' venv and install the lean set (smartnoise-synth without
    its dependencies, then what AIM and MST import); return its python. Idempotent
    (:func:`bench.venvs.build_venv`); checks that AIM and MST import without PyTorch."""
    return build_venv(Path(venv or PEERS_VENV), label="peers", marker=_MARKER, requested=_requested(),
                      pins=_PINS, constraints_name="peers-constraints.txt",
                      steps=[["--no-deps", *_STEP_NO_DEPS], _STEP_DEPS], check=_CHECK)


def ensure_env_for(mechanism: str) -> Path:
    """Build (or check) the venv that runs ``mechanism``; return its python."""
    if mechanism in DPMM_MECHANISMS:
        return ensure_dpmm_env()
    return ensure_opendp_env() if mechanism in OPENDP_MECHANISMS else ensure_peer_env()


# ============================================================================================
# Binning with the public domain
# ============================================================================================


def _integer_bin_ranges(lower: float, upper: float, bins: int) -> list[list[int] | None]:
    """Smallest and largest integer in each equal-width bin (``None`` for a bin without one)."""
    lo, hi = math.ceil(lower), math.floor(upper)
    if hi < lo or hi - lo > 10_000_000:
        return [None] * bins
    values = np.arange(lo, hi + 1, dtype=np.float64)
    codes = _bin_codes(values, lower, upper, bins)
    ranges: list[list[int] | None] = [None] * bins
    present = np.unique(codes)
    first = np.searchsorted(codes, present, side="left")
    last = np.searchsorted(codes, present, side="right") - 1
    for code, a, b in zip(present, first, last, strict=True):
        ranges[int(code)] = [int(values[a]), int(values[b])]
    return ranges


def _bin_codes(values: np.ndarray, lower: float, upper: float, bins: int) -> np.ndarray:
    clipped = np.clip(values, lower, upper)
    codes = np.floor((clipped - lower) / (upper - lower) * bins)
    return np.clip(codes, 0, bins - 1).astype(np.int64)


def bin_for_peers(frame: pl.DataFrame, domain: Mapping | Domain, bins: int) -> tuple[pl.DataFrame, dict]:
    """Code every column as small non-negative integers using only the public ``domain``.

    Categorical: the index in its declared category list (the null, when declared, is the
    last code). Numeric: ``bins`` equal-width bins over the declared bounds (values clipped
    first); a nullable numeric column's null is code ``bins``. Returns the codes frame
    (``Int64`` columns, same names and order) and a JSON-able spec for :func:`unbin`, whose
    ``n_codes`` per column is the declared domain size the peers get.
    """
    if bins < 1:
        msg = f"bins must be >= 1. Got {bins}"
        raise ValueError(msg)
    parsed = domain if isinstance(domain, Domain) else Domain.from_mapping(frame.schema, domain)
    columns, codes = [], {}
    for spec in parsed.columns:
        series = frame[spec.name]
        entry: dict[str, Any] = {"name": spec.name, "kind": spec.kind, "dtype": dtype_name(series.dtype),
                                 "nullable": spec.nullable}
        if spec.is_categorical:
            cats = list(spec.categories)
            mapped = series.replace_strict(cats, list(range(len(cats))), default=None,
                                           return_dtype=pl.Int64)
            unlisted = mapped.is_null() & series.is_not_null()
            if unlisted.any():
                if spec.unlisted != "null":
                    bad = series.filter(unlisted).unique().head(5).to_list()
                    msg = f"column {spec.name!r} holds values outside its declared categories, e.g. {bad}"
                    raise ValueError(msg)
            null_code = len(cats) if spec.nullable else None
            entry.update(categories=cats, n_codes=spec.n_codes)
        else:
            values = series.cast(pl.Float64).to_numpy()
            present = ~np.isnan(values) if series.null_count() == 0 else series.is_not_null().to_numpy()
            raw = np.zeros(series.len(), dtype=np.int64)
            raw[present] = _bin_codes(values[present], spec.lower, spec.upper, bins)
            mapped = pl.Series(spec.name, raw).set(pl.Series(~present), None) if (~present).any() else pl.Series(spec.name, raw)
            null_code = bins if spec.nullable else None
            entry.update(lower=spec.lower, upper=spec.upper, bins=bins, n_codes=bins + int(spec.nullable),
                         integer=series.dtype.is_integer())
            if entry["integer"]:
                entry["integer_ranges"] = _integer_bin_ranges(spec.lower, spec.upper, bins)
        if mapped.null_count():
            if null_code is None:
                msg = (f"column {spec.name!r} holds nulls but its domain declares none; declare it "
                       "nullable (None in the category list, or {'bounds': ..., 'nullable': True})")
                raise ValueError(msg)
            mapped = mapped.fill_null(null_code)
        codes[spec.name] = mapped.cast(pl.Int64).alias(spec.name)
        columns.append(entry)
    spec_out = {"format": 1, "bins": bins, "columns": columns, "labels": list(parsed.labels)}
    return pl.DataFrame([codes[c["name"]] for c in columns]), spec_out


def unbin(codes: pl.DataFrame, spec: Mapping, rng: np.random.Generator | int | None = None) -> pl.DataFrame:
    """Decode peer codes back to the original names, order and dtypes (see :func:`bin_for_peers`).

    Categories map back to their values (the null code to null); a numeric code becomes a
    uniform value inside its bin (integers: a uniform integer among those the bin holds),
    always inside the public bounds; a nullable numeric column's null code becomes null.
    """
    rng = np.random.default_rng(rng)
    out = []
    for entry in spec["columns"]:
        name = entry["name"]
        raw = codes[name].cast(pl.Int64).to_numpy()
        if np.any((raw < 0) | (raw >= entry["n_codes"])):
            msg = f"column {name!r}: codes outside [0, {entry['n_codes']})"
            raise ValueError(msg)
        dtype = dtype_from(entry["dtype"], entry.get("categories", []))
        if entry["kind"] == "categorical":
            cats = entry["categories"]
            values = [cats[c] if c < len(cats) else None for c in raw.tolist()]
            series = pl.Series(name, values, strict=False)
            series = series.cast(dtype) if series.dtype != pl.Null else pl.Series(name, values, dtype=dtype)
        else:
            lo, hi, bins = entry["lower"], entry["upper"], entry["bins"]
            is_null = raw >= bins
            code = np.minimum(raw, bins - 1)
            width = (hi - lo) / bins
            value = np.clip(lo + (code + rng.random(raw.size)) * width, lo, hi)
            if entry.get("integer"):
                value = np.clip(np.round(value), math.ceil(lo), math.floor(hi))
                ranges = entry.get("integer_ranges") or [None] * bins
                a = np.array([r[0] if r else np.nan for r in ranges])[code]
                b = np.array([r[1] if r else np.nan for r in ranges])[code]
                has = ~np.isnan(a)
                pick = a[has] + np.floor(rng.random(int(has.sum())) * (b[has] - a[has] + 1))
                value[has] = np.minimum(pick, b[has])
            series = pl.Series(name, value)
            if is_null.any():
                series = series.set(pl.Series(is_null), None)
            series = series.cast(dtype)
        out.append(series.alias(name))
    return pl.DataFrame(out)


# ============================================================================================
# Running one peer in the venv
# ============================================================================================


@dataclass
class PeerResult:
    """One peer run. ``peak_rss_mib`` is the worker's own peak RSS (``ru_maxrss`` from
    ``os.wait4`` on that child, so per call, not the harness's cumulative RUSAGE_CHILDREN)."""

    mechanism: str
    bins: int
    status: str  # "ok" | "timeout" | "error"
    data: pl.DataFrame | None
    seconds: float
    peak_rss_mib: float | None
    message: str = ""
    fit_seconds: float | None = None
    fixed_data: pl.DataFrame | None = None  # with also_fixed_sampler=True: same fit, fixed sampler
    cliques: tuple[tuple[str, ...], ...] | None = None  # the fitted model's cliques (column names)
    details: dict | None = None  # what the worker reports beyond that (OpenDP: privacy figures)

    def row(self) -> dict:
        return {"mechanism": self.mechanism, "bins": self.bins, "status": self.status,
                "seconds": round(self.seconds, 2),
                "peak_rss_mib": None if self.peak_rss_mib is None else round(self.peak_rss_mib, 1),
                "fit_seconds": None if self.fit_seconds is None else round(self.fit_seconds, 2),
                "message": self.message}


def run_peer(mechanism: str, train: pl.DataFrame, domain: Mapping | Domain, epsilon: float, delta: float,
             seed: int, bins: int, rows: int, time_cap_s: float, workdir: Path,
             python: Path | None = None, also_fixed_sampler: bool = False) -> PeerResult:
    """Fit ``mechanism`` on ``train`` (binned with the public ``domain``) in the peers' venv.

    Writes ``codes.parquet`` and ``spec.json`` into ``workdir``, runs ``peers_worker.py``
    in its own process group (killed whole at ``time_cap_s``), reads ``synthetic.parquet``
    back and unbins it with ``seed``. ``seconds`` is the worker's wall-clock time (venv
    start-up, imports, fit and sampling). Never raises for a failing or slow peer: the
    status says what happened and ``message`` holds the last lines of stderr.

    ``also_fixed_sampler=True`` (with ``"aim"`` / ``"mst"`` / ``"aim-opendp"``) also samples
    the SAME fitted model with the fixed sampler into ``result.fixed_data``: one fit, both rows.

    OpenDP mechanisms run ``peers_opendp_worker.py`` in ``OPENDP_VENV`` and are given
    ``--rho``, the zCDP budget ρ(ε, δ) of polars-rap's tight conversion (the one rap++ spends);
    so is ``aim-replace-one``, which ``peers_worker.py`` runs at the add/remove budget that
    makes smartnoise's AIM ρ-zCDP under replace-one (``aim_replace_one_rho``). dpmm mechanisms
    run ``peers_dpmm_worker.py`` in ``DPMM_VENV`` on the raw columns (:func:`_dpmm_inputs`).
    """
    if mechanism not in MECHANISMS:
        msg = f"mechanism must be one of {MECHANISMS}. Got {mechanism!r}"
        raise ValueError(msg)
    is_opendp, is_dpmm = mechanism in OPENDP_MECHANISMS, mechanism in DPMM_MECHANISMS
    venv = DPMM_VENV if is_dpmm else OPENDP_VENV if is_opendp else PEERS_VENV
    python = Path(python) if python else venv_python(venv)
    if not python.exists():
        script = "bench/peers_dpmm.py" if is_dpmm else "bench/peers_opendp.py" if is_opendp else "bench/peers.py"
        msg = f"peers venv python {python} not found; build it with {script} --ensure"
        raise FileNotFoundError(msg)
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    out_path = workdir / "synthetic.parquet"
    fixed_path = workdir / "synthetic_fixed.parquet"
    out_path.unlink(missing_ok=True)
    fixed_path.unlink(missing_ok=True)
    from polars_rap.privacy.ledger import rho_from_epsilon_delta

    needs_rho = is_opendp or is_dpmm or "-replace-one" in mechanism
    rho = rho_from_epsilon_delta(float(epsilon), float(delta)) if needs_rho else None
    if is_dpmm:
        arguments, dpmm_spec = _dpmm_inputs(mechanism, train, domain, rho, workdir)
        command = [str(python), str(DPMM_WORKER), *arguments, "--bins", str(int(bins))]

        def decode(frame: pl.DataFrame, stream: int) -> pl.DataFrame:
            return from_dpmm(frame, dpmm_spec)
    else:
        codes, spec = bin_for_peers(train, domain, bins)
        codes_path, spec_path = workdir / "codes.parquet", workdir / "spec.json"
        codes.write_parquet(codes_path)
        spec_path.write_text(json.dumps(spec))
        command = [str(python), str(OPENDP_WORKER if is_opendp else WORKER), "--codes", str(codes_path),
                   "--spec", str(spec_path)]

        def decode(frame: pl.DataFrame, stream: int) -> pl.DataFrame:
            return unbin(frame, spec, np.random.default_rng([int(seed), stream]))
    command += ["--mechanism", mechanism, "--epsilon", repr(float(epsilon)), "--delta", repr(float(delta)),
                "--seed", str(int(seed)), "--rows", str(int(rows)), "--out", str(out_path)]
    if needs_rho:
        command += ["--rho", repr(rho)]
    if also_fixed_sampler and not is_dpmm and not mechanism.endswith("-fixed-sampler"):
        command += ["--also-fixed-out", str(fixed_path)]
    stdout_path, stderr_path = workdir / "worker.stdout", workdir / "worker.stderr"
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONHASHSEED": str(int(seed)), "PYTHONUNBUFFERED": "1"}
    env.pop("PYTHONPATH", None)
    timed_out = threading.Event()
    started = time.perf_counter()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(command, stdout=out, stderr=err, env=env, start_new_session=True)

        def _kill() -> None:
            timed_out.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        timer = threading.Timer(time_cap_s, _kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # e.g. KeyboardInterrupt: take the worker down with us
            _kill()
            os.wait4(proc.pid, 0)
            raise
        finally:
            timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        # the worker is reaped; kill anything it left behind in its group
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    seconds = time.perf_counter() - started
    peak = usage.ru_maxrss / 1024  # Linux: KiB
    stderr_tail = "\n".join(stderr_path.read_text(errors="replace").strip().splitlines()[-15:])
    if timed_out.is_set() and os.WIFSIGNALED(status):
        return PeerResult(mechanism, bins, "timeout", None, seconds, peak,
                          f"killed after the {time_cap_s:g}s cap\n{stderr_tail}".strip())
    if proc.returncode != 0 or not out_path.exists():
        return PeerResult(mechanism, bins, "error", None, seconds, peak,
                          f"exit {proc.returncode}\n{stderr_tail}".strip())
    data = decode(pl.read_parquet(out_path), 4)
    fixed = decode(pl.read_parquet(fixed_path), 5) if fixed_path.exists() else None
    try:
        summary = json.loads(stdout_path.read_text().strip().splitlines()[-1])
    except (IndexError, ValueError):
        summary = {}
    cliques = summary.get("cliques")
    return PeerResult(mechanism, bins, "ok", data, seconds, peak, "", summary.get("fit_seconds"), fixed,
                      None if cliques is None else tuple(tuple(c) for c in cliques), summary.get("details"))


def _dpmm_inputs(mechanism: str, train: pl.DataFrame, domain: Mapping | Domain, rho: float,
                 workdir: Path) -> tuple[list[str], dict]:
    """Write dpmm's raw columns, its public domain and the budget plan into ``workdir``;
    return the worker's arguments for them and the spec that decodes its output."""
    data, dpmm_domain, spec = to_dpmm(train, domain)
    plan = plan_budget(mechanism.removeprefix("dpmm-"), rho, spec["n_columns"], spec["n_numeric"])
    paths = {name: workdir / name for name in ("data.parquet", "domain.json", "plan.json")}
    data.write_parquet(paths["data.parquet"])
    paths["domain.json"].write_text(json.dumps(dpmm_domain))
    paths["plan.json"].write_text(json.dumps(plan))
    return ["--data", str(paths["data.parquet"]), "--domain", str(paths["domain.json"]),
            "--plan", str(paths["plan.json"])], spec


def main() -> int:
    return ensure_command(__doc__, ensure_peer_env, "the peers venv")


if __name__ == "__main__":
    raise SystemExit(main())
