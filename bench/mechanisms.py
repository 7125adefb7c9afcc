"""Mechanisms compared by the benchmark harness (bench/run.py, benchmarks.md).

Each mechanism is one small function with the same keyword signature::

    mechanism(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun

``train`` is the training split (pl.DataFrame), ``task_domain`` the task's public ``domain=``
mapping (from the committed TOML, never from rows), ``labels`` the label columns, ``settings``
a plain dict of the run's planned parameters (the same dict bench/run.py writes to the
``parameters`` column). ``MechanismRun.data`` has the columns, order and dtypes of ``train``
so that one evaluation applies to every mechanism.

``MECHANISMS`` maps the names used on the command line to these functions.
"""

from __future__ import annotations

import math
import tempfile
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl

__all__ = [
    "MECHANISMS", "MechanismRun", "PEER_MECHANISMS", "bin_column", "bin_frame",
    "final_sigma", "independent", "public_table", "unbin_column", "unbin_frame",
]


@dataclass(frozen=True, slots=True)
class MechanismRun:
    """What one mechanism run produced.

    ``status`` is ``"ok"``, ``"timeout"`` or ``"error"``; ``data`` is None unless ok.
    ``seconds`` is the wall-clock time of the fit and sampling (not of the evaluation);
    ``peak_rss_mib`` is set only when the work ran in another process (peers): otherwise
    the harness reads its own child's peak RSS. ``parameters`` holds what the mechanism
    reports about itself (e.g. the zCDP spent), ``message`` any note or error.
    ``companions`` holds the runs of other mechanisms that the same fit produced.
    """

    data: pl.DataFrame | None
    status: str
    seconds: float
    peak_rss_mib: float | None = None
    parameters: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    relaxed: Any = None
    """polars-rap's relaxed data (float32[n_relaxed, n_coords]), to score it beside the
    decoded rows; None for other mechanisms."""
    companions: dict[str, MechanismRun] = field(default_factory=dict)
    """Runs of other mechanisms that came out of the same fit, by mechanism name (a peer's
    fixed-sampler row from the fit of its shipped row)."""


# ============================================================================================
# Equal-width binning over public bounds (rap-binned, independent, peers)
# ============================================================================================


def numeric_bounds(declared: Any) -> tuple[float, float, bool] | None:
    """``(lower, upper, nullable)`` of a numeric ``domain=`` entry; None for a categorical one."""
    if isinstance(declared, tuple):
        return float(declared[0]), float(declared[1]), False
    if isinstance(declared, Mapping) and "bounds" in declared:
        lower, upper = declared["bounds"]
        return float(lower), float(upper), bool(declared.get("nullable", False))
    return None


def bin_column(values: pl.Series, lower: float, upper: float, bins: int) -> pl.Series:
    """Int32 bin index in ``[0, bins)`` of each value: equal-width bins over ``[lower, upper]``,
    values outside clipped into the end bins, nulls (and NaN) kept null."""
    if bins < 1:
        msg = f"The 'bins' parameter must be an int >= 1. Got {bins!r}"
        raise ValueError(msg)
    x = values.cast(pl.Float64).fill_nan(None)
    index = ((x - lower) * bins / (upper - lower)).floor().clip(0, bins - 1)
    return index.cast(pl.Int32).alias(values.name)


def unbin_column(codes: pl.Series, lower: float, upper: float, bins: int, dtype: pl.DataType,
                 rng: np.random.Generator) -> pl.Series:
    """Numbers drawn uniformly within each bin, as ``dtype``; nulls stay null.

    For an integer ``dtype`` the draw is uniform over the integers inside the bin, so that
    binning the result gives the same bin back; a bin narrower than one unit that holds no
    integer gets the integer nearest its centre.
    """
    code_array = codes.cast(pl.Float64).to_numpy().copy()
    is_null = np.isnan(code_array)
    code_array[is_null] = 0.0
    width = (upper - lower) / bins
    if dtype.is_integer():
        left = np.ceil(lower + code_array * width)
        right = np.where(code_array == bins - 1, np.floor(upper), np.ceil(lower + (code_array + 1) * width) - 1)
        empty = right < left
        centre = np.clip(np.round(lower + (code_array + 0.5) * width), lower, upper)
        left = np.where(empty, centre, left)
        right = np.where(empty, centre, right)
        values = np.floor(left + rng.random(code_array.shape) * (right - left + 1))
        values = np.minimum(values, right)
    else:
        values = lower + (code_array + rng.random(code_array.shape)) * width
        values = np.clip(values, lower, upper)
    series = pl.Series(codes.name, values, dtype=pl.Float64)
    series = series.scatter(np.flatnonzero(is_null), None) if is_null.any() else series
    return series.cast(dtype)


def binned_domain(task_domain: Mapping[str, Any], bins: int) -> dict[str, Any]:
    """The ``domain=`` mapping with every numeric column replaced by bin codes ``0..bins-1``
    (``None`` appended when the column is nullable)."""
    out: dict[str, Any] = {}
    for name, declared in task_domain.items():
        bounds = numeric_bounds(declared)
        out[name] = declared if bounds is None else [*range(bins), *([None] if bounds[2] else [])]
    return out


def bin_frame(frame: pl.DataFrame, task_domain: Mapping[str, Any], bins: int) -> pl.DataFrame:
    """``frame`` with each numeric column of ``task_domain`` as Int32 bin codes."""
    replaced = []
    for name, declared in task_domain.items():
        bounds = numeric_bounds(declared)
        if bounds is not None:
            replaced.append(bin_column(frame.get_column(name), bounds[0], bounds[1], bins))
    return frame.with_columns(replaced) if replaced else frame


def unbin_frame(binned: pl.DataFrame, task_domain: Mapping[str, Any], bins: int,
                schema: Mapping[str, pl.DataType], rng: np.random.Generator) -> pl.DataFrame:
    """Inverse of :func:`bin_frame` up to the position inside each bin (uniform, see
    :func:`unbin_column`); numeric columns get their dtype from ``schema``."""
    replaced = []
    for name, declared in task_domain.items():
        bounds = numeric_bounds(declared)
        if bounds is not None:
            replaced.append(unbin_column(binned.get_column(name), bounds[0], bounds[1], bins,
                                         schema[name], rng))
    return binned.with_columns(replaced) if replaced else binned


# ============================================================================================
# RAP++ variants (polars_rap.synthesize)
# ============================================================================================


def strategy_spec(settings: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """The run's strategy as polars_rap's mapping form: ``settings["strategy"]`` (a suite's or an
    ablation's settings, over the default ``"planned"``) with ``changes`` merged (a nested table,
    e.g. ``rounds``, key by key)."""
    from bench.harness import merged

    return merged(settings.get("strategy") or {}, changes)


def _projection_config(settings: Mapping[str, Any]):
    from polars_rap import ProjectionConfig

    return ProjectionConfig(**dict(strategy_spec(settings).get("projection") or {}))


def final_sigma(config) -> float:
    """The last inverse temperature of the annealing schedule: ``sigma_initial * 2**max_doublings``."""
    return float(config.sigma_initial) * 2.0 ** int(config.max_doublings)


def _synthesize_run(train, domain, labels, epsilon, delta, seed, settings, strategy: dict[str, Any],
                    **overrides) -> MechanismRun:
    """One ``synthesize`` fit: the settings' ``synthesize`` keywords with ``overrides``, and the
    ``strategy`` mapping (:func:`strategy_spec`)."""
    import polars_rap

    options = {**dict(settings.get("synthesize") or {}), **overrides}
    started = time.perf_counter()
    result = polars_rap.synthesize(train, epsilon=epsilon, delta=delta, domain=domain, labels=labels, seed=seed,
                                   progress=False, strategy=strategy, **options)
    seconds = time.perf_counter() - started
    report = result.report
    details = {"rho_budget": report.rho_budget, "rho_spent": report.rho_spent,
               "rounds": report.parameters.get("rounds")}
    if report.public_data is not None:  # rows, hash, uses and what they charged (issue 19)
        details["public_data"] = report.public_data
    return MechanismRun(result.data, "ok", seconds, None, details, "", relaxed=result.relaxed)


def rap_plus_plus(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """polars-rap's default (``strategy="planned"``) with categorical marginals and linear
    thresholds, the paper's workload (mixed marginals too where the settings' strategy gives
    them rounds, as an ablation may)."""
    return _synthesize_run(train, task_domain, labels, epsilon, delta, seed, settings, strategy_spec(settings))


def rap_plus_plus_paper(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """RAP++ exactly as the paper's Alg. 2 (``strategy="paper"``), CM and LT rounds."""
    return _synthesize_run(train, task_domain, labels, epsilon, delta, seed, settings,
                           strategy_spec(settings, name="paper", rounds={"MM": 0}))


def rap_plus_plus_mm(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """The paper's RAP++ with mixed marginals too (``settings["rounds_mm"]`` rounds of them)."""
    return _synthesize_run(train, task_domain, labels, epsilon, delta, seed, settings,
                           strategy_spec(settings, name="paper", rounds={"MM": int(settings["rounds_mm"])}))


def rap_plus_plus_fixed_sigma(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """The paper's RAP++ without annealing: one stage at the default schedule's final σ
    (Fig. 1 compares it with ``rap++paper``).

    The single stage gets the whole step budget of the annealed schedule
    (``max_steps * (1 + max_doublings)``), so that the comparison is of the schedule, not of
    the number of Adam steps (patience still ends it early).
    """
    import dataclasses

    annealed = _projection_config(settings)
    fixed = dataclasses.replace(annealed, max_doublings=0, sigma_initial=final_sigma(annealed),
                                max_steps=annealed.stage_steps * (1 + annealed.max_doublings))
    run = _synthesize_run(train, task_domain, labels, epsilon, delta, seed, settings, strategy_spec(
        settings, name="paper", rounds={"MM": 0}, projection=dataclasses.asdict(fixed)))
    details = {**run.parameters, "sigma": fixed.sigma_initial, "max_steps": fixed.max_steps}
    return dataclasses.replace(run, parameters=details)


PRIVATE_STATE = "CA"
MISMATCHED_STATE = "PR"


@lru_cache(maxsize=2)
def _public_frame(kind: str, columns: tuple[str, ...]) -> pl.DataFrame:
    from bench.harness import acs_state_tables

    if kind == "matched":
        return acs_state_tables(columns, but=PRIVATE_STATE)
    if kind == "mismatched":
        return acs_state_tables(columns, only=MISMATCHED_STATE)
    if kind.startswith("state:"):
        return acs_state_tables(columns, only=kind.removeprefix("state:"))
    msg = f"unknown public table {kind!r}; choose 'matched', 'mismatched' or 'state:<ST>' (one state's rows)"
    raise ValueError(msg)


def public_table(kind: str, columns: Sequence[str]) -> pl.DataFrame:
    """A public table for the ``acs-income-CA`` task, preprocessed as the task
    (:func:`bench.harness.acs_state_tables`), ``columns`` in order: ``"matched"`` (every ACS
    state table but CA's: 50 states' and Puerto Rico's rows, a table like CA's), ``"mismatched"``
    (Puerto Rico's 1,608 rows alone, a very different table) or ``"state:<ST>"`` (one state's)."""
    return _public_frame(kind, tuple(columns))


def rap_plus_plus_public(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """polars-rap's default with a public table as a prior (issue 19): ``settings["public"]``
    names the table (:func:`public_table`) and ``settings["public_use"]`` its uses."""
    import dataclasses

    public = public_table(settings["public"], train.columns)
    run = _synthesize_run(train, task_domain, labels, epsilon, delta, seed, settings, strategy_spec(settings),
                          public=public, public_use=list(settings["public_use"]))
    return dataclasses.replace(run, parameters={**run.parameters, "public_rows": public.height})


def rap_binned(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
    """The paper's RAP baseline through polars-rap: numerics binned into ``settings["bins"]``
    equal-width categories over the public bounds, categorical marginals only, then unbinned
    (uniform within the bin). Its stages run the paper's 60 Adam steps unless ``settings`` set
    ``max_steps`` (the planned strategy's 30 came after its committed rows)."""
    import dataclasses

    bins = int(settings["bins"])
    configured = _projection_config(settings)
    projection = dataclasses.replace(configured, max_steps=configured.stage_steps)
    started = time.perf_counter()
    binned = bin_frame(train, task_domain, bins)
    run = _synthesize_run(binned, binned_domain(task_domain, bins), labels, epsilon, delta, seed, settings,
                          strategy_spec(settings, rounds={"LT": 0, "MM": 0}, projection=dataclasses.asdict(projection)))
    rng = np.random.default_rng([seed, 7])  # its own stream, apart from synthesize's
    data = unbin_frame(run.data, task_domain, bins, train.schema, rng).select(train.columns)
    # Its relaxed rows live in the binned domain: the harness's relaxed errors (task domain) do not apply.
    return dataclasses.replace(run, data=data, seconds=time.perf_counter() - started, relaxed=None)


# ============================================================================================
# Independent noisy 1-way marginals (the floor)
# ============================================================================================


def _column_cells(series: pl.Series, declared: Any, bins: int) -> tuple[np.ndarray, int]:
    """int64[n_rows] cell code of each value and the number of cells: category index (null
    last when declared) or bin index (null as cell ``bins`` when nullable)."""
    bounds = numeric_bounds(declared)
    if bounds is not None:
        lower, upper, nullable = bounds
        codes = bin_column(series, lower, upper, bins)
        n_cells = bins + int(nullable)
        if codes.null_count() and not nullable:
            msg = f"column {series.name!r} holds nulls but its public domain is not nullable"
            raise ValueError(msg)
        return codes.fill_null(bins).to_numpy().astype(np.int64), n_cells
    categories = list(declared)
    lookup = {value: index for index, value in enumerate(categories)}
    values = series.cast(pl.String).to_list() if isinstance(series.dtype, pl.Enum | pl.Categorical) else series.to_list()
    try:
        codes = np.fromiter((lookup[v] for v in values), dtype=np.int64, count=len(values))
    except KeyError as error:
        msg = f"column {series.name!r} holds {error.args[0]!r}, which is not in its public category list"
        raise ValueError(msg) from None
    return codes, len(categories)


def _cells_to_series(name: str, cells: np.ndarray, declared: Any, bins: int, dtype: pl.DataType,
                     rng: np.random.Generator) -> pl.Series:
    bounds = numeric_bounds(declared)
    if bounds is not None:
        lower, upper, _ = bounds
        codes = pl.Series(name, np.where(cells == bins, -1, cells), dtype=pl.Int64)
        codes = codes.set(codes == -1, None)  # cell ``bins`` is the null cell
        return unbin_column(codes, lower, upper, bins, dtype, rng)
    categories = list(declared)
    return pl.Series(name, [categories[c] for c in cells], dtype=dtype)


def independent_noise_std(n_rows: int, rho_column: float) -> float:
    """Noise std of one noisy 1-way histogram of fractions: L2 sensitivity ``sqrt(2) / n``
    (replace-one moves one row between two cells) over ``sqrt(2 rho_column)``, i.e.
    ``1 / (n sqrt(rho_column))``."""
    return math.sqrt(2.0) / n_rows / math.sqrt(2.0 * rho_column)


def independent(train, task_domain, labels, epsilon, delta, seed, settings, *,
                ledger=None) -> MechanismRun:
    """Independent noisy 1-way marginals: each column's histogram (numerics in
    ``settings["bins"]`` equal-width bins over the public bounds) measured with the Gaussian
    mechanism, the tight ρ(ε, δ) split evenly over the columns; each column sampled on its
    own from its clipped, renormalised noisy histogram. ``ledger`` (a fresh
    :class:`~polars_rap.privacy.ledger.PrivacyLedger` of ρ(ε, δ) by default) is for tests."""
    from polars_rap.privacy.ledger import PrivacyLedger, gaussian_mechanism, rho_from_epsilon_delta

    started = time.perf_counter()
    bins = int(settings.get("bins", 20))
    rho = rho_from_epsilon_delta(epsilon, delta)
    ledger = PrivacyLedger(rho) if ledger is None else ledger
    noise_rng, sample_rng = np.random.default_rng(seed).spawn(2)
    n_rows = train.height
    columns = list(train.columns)
    sensitivity = math.sqrt(2.0) / n_rows
    out = []
    stds = {}
    for position, name in enumerate(columns):
        cells, n_cells = _column_cells(train.get_column(name), task_domain[name], bins)
        histogram = np.bincount(cells, minlength=n_cells).astype(np.float64) / n_rows
        is_last = position == len(columns) - 1
        column_rho = ledger.rho_remaining if is_last else rho / len(columns)
        noisy, std = gaussian_mechanism(histogram, sensitivity, column_rho, ledger, noise_rng,
                                        description=f"1-way marginal {name}", n_rows=n_rows)
        stds[name] = std
        weights = np.clip(noisy, 0.0, None)
        total = weights.sum()
        weights = weights / total if total > 0 else np.full(n_cells, 1.0 / n_cells)
        sampled = sample_rng.choice(n_cells, size=n_rows, p=weights)
        out.append(_cells_to_series(name, sampled, task_domain[name], bins, train.schema[name], sample_rng))
    data = pl.DataFrame(out)
    details = {"rho_budget": rho, "rho_spent": ledger.rho_spent,
               "noise_std": float(np.mean(list(stds.values())))}
    return MechanismRun(data, "ok", time.perf_counter() - started, None, details, "")


# ============================================================================================
# Peers (bench/peers.py, another engineer's module)
# ============================================================================================

PEER_MECHANISMS = ("aim", "mst", "aim-fixed-sampler", "mst-fixed-sampler",
                   "aim-replace-one", "aim-replace-one-fixed-sampler",
                   "aim-opendp", "aim-opendp-fixed-sampler",
                   "dpmm-aim", "dpmm-mst", "dpmm-privbayes")
DPMM_PEERS = ("dpmm-aim", "dpmm-mst", "dpmm-privbayes")
"""dpmm's pipelines: raw columns with PrivTree binning, and no fixed-sampler companion (dpmm's
model is its own mbi). Every peer's venv is built by ``bench.peers.ensure_env_for``."""


def _peer(name: str) -> Callable[..., MechanismRun]:
    shares_fit = not name.endswith("-fixed-sampler") and name not in DPMM_PEERS

    def run(train, task_domain, labels, epsilon, delta, seed, settings) -> MechanismRun:
        try:
            from bench.peers import ensure_env_for, run_peer
        except Exception as error:  # absent or broken module: a row that says so
            return MechanismRun(None, "error", 0.0, None, {},
                                f"bench.peers unavailable: {type(error).__name__}: {error}")
        try:
            ensure_env_for(name)
        except Exception as error:
            return MechanismRun(None, "error", 0.0, None, {},
                                f"peer environment could not be built: {type(error).__name__}: {error}")
        arguments = (name, train, task_domain, epsilon, delta, seed, int(settings["bins"]), train.height,
                     float(settings["time_cap_s"]))
        try:
            with tempfile.TemporaryDirectory(prefix=f"peer-{name}-") as workdir:
                if shares_fit:  # one fit, sampled as shipped and with the fixed sampler
                    result = run_peer(*arguments, workdir, also_fixed_sampler=True)
                else:
                    result = run_peer(*arguments, workdir)
        except Exception as error:
            return MechanismRun(None, "error", 0.0, None, {},
                                f"run_peer raised {type(error).__name__}: {error}; "
                                + traceback.format_exc(limit=3).replace("\n", " | "))
        details = {"bins": result.bins, "fit_seconds": getattr(result, "fit_seconds", None),
                   **(getattr(result, "details", None) or {})}
        main = MechanismRun(_as_train(result.data, train) if result.status == "ok" else None,
                            str(result.status), float(result.seconds or 0.0), result.peak_rss_mib,
                            details, str(result.message or ""))
        if not shares_fit:
            return main
        fixed = getattr(result, "fixed_data", None)
        if result.status == "ok" and fixed is None:
            companion = MechanismRun(None, "error", main.seconds, main.peak_rss_mib, details,
                                     "the fit returned no fixed-sampler data")
        else:
            companion = MechanismRun(_as_train(fixed, train) if result.status == "ok" else None,
                                     main.status, main.seconds, main.peak_rss_mib, details,
                                     f"same fit as the {name} row (seconds and peak RSS are that fit's)"
                                     + (f"; {main.message}" if main.message else ""))
        return MechanismRun(main.data, main.status, main.seconds, main.peak_rss_mib, details,
                            main.message, companions={f"{name}-fixed-sampler": companion})

    run.__name__ = name.replace("-", "_")
    run.__doc__ = (f"The peer {name!r}, run by bench.peers.run_peer in its own environment"
                   + ("; the same fit also gives the fixed-sampler row." if shares_fit else "."))
    return run


def _as_train(data: pl.DataFrame | None, train: pl.DataFrame) -> pl.DataFrame | None:
    """A peer's output with ``train``'s column order and dtypes."""
    return None if data is None else data.select(train.columns).cast(dict(train.schema))


MECHANISMS: dict[str, Callable[..., MechanismRun]] = {
    "rap++": rap_plus_plus,
    "rap++paper": rap_plus_plus_paper,
    "rap++mm": rap_plus_plus_mm,
    "rap-binned": rap_binned,
    "independent": independent,
    "rap++fixed-sigma": rap_plus_plus_fixed_sigma,
    "rap++public": rap_plus_plus_public,
    **{name: _peer(name) for name in PEER_MECHANISMS},
}
"""Mechanism name -> function, in the order the suites run them."""

BINNED_MECHANISMS: Sequence[str] = ("rap-binned", *PEER_MECHANISMS)
"""Mechanisms run once per bins value (each its own row)."""
