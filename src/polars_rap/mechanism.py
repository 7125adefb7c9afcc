"""RAP++ (paper Alg. 2, design.md §4): select, measure, project; then decode.

The zCDP budget ``rho`` from (ε, δ) is split evenly over ``T`` rounds; each round spends
``selection_share`` of its part on one-shot Gumbel top-K selection of ``K`` groups not yet
measured (by the L1 error of the current synthetic data) and the rest on Gaussian
measurements of those groups, split evenly; the relaxed data is then projected onto all
measurements so far, warm-started. Rounds of the query classes (categorical marginals,
linear thresholds, mixed marginals) are interleaved evenly.

Selection scores use the *expected* answers of the decoded data: hard thresholds on the
relaxed rows, i.e. the mean over all decodings, rather than one random draw whose sampling
noise (about sqrt(cells / rows) in L1) would swamp the errors being ranked. Both are
post-processing of released values; only the true answers make the scores private.
"""

from __future__ import annotations

import logging
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl
from tqdm.auto import tqdm

from polars_rap import kernels
from polars_rap.domain import Domain
from polars_rap.encoding import decode, encode
from polars_rap.privacy import (
    PrivacyLedger,
    gaussian_mechanism,
    gumbel_top_k,
    rho_from_epsilon_delta,
)
from polars_rap.projection import ProjectionConfig, RelaxedParams, project
from polars_rap.queries import QueryClass, QuerySet
from polars_rap.report import PrivacyReport, interval_halfwidth
from polars_rap.workload import build_workload, describe_queries, group_sensitivities

__all__ = ["synthesize", "SynthesisResult"]

logger = logging.getLogger(__name__)

_CLASS_CODES = {"CM": QueryClass.CATEGORICAL_MARGINAL, "MM": QueryClass.MIXED_MARGINAL,
                "LT": QueryClass.LINEAR_THRESHOLD}


@dataclass(frozen=True, slots=True, eq=False)
class SynthesisResult:
    """Synthetic data and what was released to make it.

    ``data`` has the input's column names, order and dtypes. ``relaxed`` (float32[n_relaxed,
    n_coords]) and ``domain`` let more rows be sampled at no privacy cost. No attribute
    refers to the sensitive input.
    """

    data: pl.DataFrame
    report: PrivacyReport
    domain: Domain
    relaxed: np.ndarray = field(repr=False)


def synthesize(
    data: pl.DataFrame | pl.LazyFrame | str | os.PathLike,
    *,
    epsilon: float,
    delta: float,
    domain: Mapping[str, Any] | None = None,
    labels: Sequence[str] = (),
    rows: int | None = None,
    seed: int | None = None,
    backend: str = "auto",
    relaxed_rows: int = 1000,
    queries_per_round: int = 10,
    rounds_cm: int | None = None,
    rounds_lt: int = 50,
    rounds_mm: int = 0,
    n_linear_thresholds: int = 20_000,
    n_mixed_marginals: int = 2_000,
    max_marginal_cells: int | None = 20_000,
    selection_share: float = 0.5,
    confidence: float = 0.95,
    projection: ProjectionConfig | None = None,
    progress: bool | None = None,
) -> SynthesisResult:
    """Differentially private synthetic data with RAP++.

    Parameters
    ----------
    data : DataFrame, LazyFrame or path to a Parquet/CSV/IPC file
        The sensitive table. Read once; no reference is kept.
    epsilon, delta : float
        The (ε, δ)-DP guarantee (replace-one neighbours, the row count is public).
    domain : mapping
        Public domain of each column: a list of categories (``None`` in it declares nulls),
        ``(lower, upper)`` bounds, ``{"bounds": (lo, hi), "nullable": True}``, or
        :class:`~polars_rap.Categorical` / :class:`~polars_rap.Numeric`. ``Enum`` and
        ``Boolean`` columns may be left out. Never derive it from the data itself.
    labels : sequence of str
        Categorical target columns; the workload is conditioned on them.
    rows : int, optional
        Rows of synthetic data (default: as many as the input).
    seed : int, optional
        Seed for reproducible research and tests. Leave ``None`` for real releases (the
        noise is then seeded from the operating system).
    backend : {"auto", "cpu", "cuda"}
        Kernel backend; ``"auto"`` picks CUDA when available, else the CPU.
    relaxed_rows : int
        Rows of the relaxed synthetic data (the paper's n-hat, default 1000).
    queries_per_round : int
        Groups selected per round (K, default 10).
    rounds_cm, rounds_lt, rounds_mm : int
        Rounds spent on categorical marginals (default: the number of categorical feature
        columns), linear thresholds (default 50) and mixed marginals (default 0).
    n_linear_thresholds, n_mixed_marginals : int
        Size of the random LT and MM workloads the rounds select from.
    max_marginal_cells : int or None
        Categorical marginals with more cells are left out of the workload.
    selection_share : float
        Part of each round's budget spent on selection (the rest on measurement).
    confidence : float
        Coverage of the per-query confidence intervals in the report.
    projection : ProjectionConfig, optional
        Optimiser settings.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).

    Returns
    -------
    SynthesisResult
        ``.data`` (pl.DataFrame) and ``.report`` (:class:`~polars_rap.report.PrivacyReport`).
    """
    _check_positive_finite("epsilon", epsilon)
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        msg = f"The 'delta' parameter must be a float in (0, 1). Got {delta!r}"
        raise ValueError(msg)
    for name, value, low in (("relaxed_rows", relaxed_rows, 1), ("queries_per_round", queries_per_round, 1),
                             ("rounds_lt", rounds_lt, 0), ("rounds_mm", rounds_mm, 0),
                             ("n_linear_thresholds", n_linear_thresholds, 0),
                             ("n_mixed_marginals", n_mixed_marginals, 0)):
        _check_int(name, value, low)
    if rounds_cm is not None:
        _check_int("rounds_cm", rounds_cm, 0)
    if rows is not None:
        _check_int("rows", rows, 1)
    if not 0.0 < selection_share < 1.0:
        msg = f"The 'selection_share' parameter must be in (0, 1). Got {selection_share!r}"
        raise ValueError(msg)
    if isinstance(labels, str):
        labels = [labels]
    projection = projection or ProjectionConfig()
    backend_module = kernels.resolve_backend(backend)

    frame = _collect(data)
    if frame.height == 0:
        msg = "the input has no rows; differential privacy needs at least one"
        raise ValueError(msg)
    public_domain = Domain.from_mapping(frame.schema, domain, labels)
    encoded = encode(frame, public_domain)
    n_rows = frame.height
    out_rows = n_rows if rows is None else int(rows)
    del frame  # nothing below reads the input frame again

    workload_rng, init_rng, noise_rng, decode_rng = np.random.default_rng(seed).spawn(4)
    n_categorical_features = sum(1 for c in public_domain.columns if c.is_categorical and c.name not in public_domain.labels)
    planned = {
        "CM": n_categorical_features if rounds_cm is None else int(rounds_cm),
        "LT": int(rounds_lt),
        "MM": int(rounds_mm),
    }
    classes = tuple(c for c in ("CM", "MM", "LT") if planned[c] > 0)
    queries = build_workload(
        public_domain, workload_rng, classes=classes, n_mixed_marginals=n_mixed_marginals,
        n_linear_thresholds=n_linear_thresholds, max_marginal_cells=max_marginal_cells,
    )
    group_class = queries.group_class
    planned = {c: (r if np.any(group_class == _CLASS_CODES[c]) else 0) for c, r in planned.items()}
    schedule = _interleave(planned)
    if not schedule:
        msg = (
            "the workload is empty: the domain needs categorical feature columns (for "
            "marginals) or numeric columns (for thresholds), and at least one round"
        )
        raise ValueError(msg)

    true_answers = backend_module.answers_exact(encoded.codes, encoded.numerics, queries)
    del encoded
    l1_sensitivity, l2_sensitivity = group_sensitivities(queries, n_rows)

    rho = rho_from_epsilon_delta(epsilon, delta)
    ledger = PrivacyLedger(rho)
    params = RelaxedParams.random(relaxed_rows, public_domain.block_sizes,
                                  len(public_domain.numeric_columns), init_rng)
    measured_groups: list[int] = []
    measured_round: list[int] = []
    noisy_parts: list[np.ndarray] = []
    noise_stds: list[float] = []
    available = np.ones(queries.n_groups, dtype=bool)
    show = sys.stderr.isatty() if progress is None else progress
    bar = tqdm(schedule, desc="RAP++ rounds", disable=not show, unit="round")
    for round_index, class_name in enumerate(bar):
        is_last = round_index == len(schedule) - 1
        round_rho = ledger.rho_remaining / (len(schedule) - round_index)
        candidates = np.flatnonzero(available & (group_class == _CLASS_CODES[class_name]))
        if len(candidates) == 0:
            continue
        k = min(queries_per_round, len(candidates))
        synthetic = backend_module.answers_relaxed(params.relaxed(), queries.take_groups(candidates), np.inf)
        errors = _group_l1(true_answers[queries.group_query_indices(candidates)] - synthetic,
                           queries.group_sizes[candidates])
        if k < len(candidates):
            selected_local = gumbel_top_k(
                errors, k, float(l1_sensitivity[candidates].max()), selection_share * round_rho,
                ledger, noise_rng, description=f"{class_name} selection", round=round_index,
            )
            measure_rho = (1.0 - selection_share) * round_rho
        else:  # selecting every candidate reveals nothing and costs nothing
            selected_local = np.arange(len(candidates))
            measure_rho = round_rho
        selected = candidates[selected_local]
        for position, group in enumerate(selected):
            if is_last and position == len(selected) - 1:
                group_rho = ledger.rho_remaining  # the last charge takes exactly what is left
            else:
                group_rho = measure_rho / len(selected)
            start, stop = queries.group_offsets[group], queries.group_offsets[group + 1]
            noisy, std = gaussian_mechanism(
                true_answers[start:stop], float(l2_sensitivity[group]), group_rho, ledger,
                noise_rng, description=f"{class_name} group {group}", round=round_index,
            )
            measured_groups.append(int(group))
            measured_round.append(round_index)
            noisy_parts.append(noisy)
            noise_stds.append(std)
            available[group] = False
        measured = queries.take_groups(np.asarray(measured_groups))
        params, trace = project(params, measured, np.concatenate(noisy_parts), backend_module,
                               projection, anneal=class_name != "CM")
        bar.set_postfix(loss=f"{trace.exact_loss:.3g}", rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
    bar.close()
    del true_answers

    relaxed = params.relaxed()
    synthetic_frame = decode(relaxed, public_domain, out_rows, decode_rng)
    report = _build_report(
        epsilon, delta, rho, ledger, n_rows, queries, public_domain, measured_groups,
        measured_round, noisy_parts, noise_stds, synthetic_frame, backend_module, confidence,
        parameters=dict(
            relaxed_rows=relaxed_rows, queries_per_round=queries_per_round, rounds=planned,
            n_linear_thresholds=n_linear_thresholds, n_mixed_marginals=n_mixed_marginals,
            max_marginal_cells=max_marginal_cells, selection_share=selection_share,
            labels=list(public_domain.labels), rows=out_rows, backend=backend_module.__name__.rsplit(".", 1)[-1],
        ),
    )
    return SynthesisResult(synthetic_frame, report, public_domain, relaxed)


# ---------------------------------------------------------------- helpers
def _group_l1(differences: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """float64[n_groups]: L1 norm of ``differences`` over consecutive groups of ``sizes``."""
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return np.add.reduceat(np.abs(differences.astype(np.float64)), starts) if len(sizes) else np.zeros(0)


def _interleave(rounds: Mapping[str, int]) -> list[str]:
    """Spread each class's rounds evenly over the schedule (deterministic)."""
    slots = [((i + 0.5) / count, name) for name, count in rounds.items() for i in range(count)]
    return [name for _, name in sorted(slots, key=lambda s: (s[0], s[1]))]


def _build_report(epsilon, delta, rho, ledger, n_rows, queries: QuerySet, domain, groups,
                  rounds, noisy_parts, stds, synthetic_frame, backend_module, confidence, parameters):
    query_index = queries.group_query_indices(np.asarray(groups, dtype=np.int64))
    sizes = queries.group_sizes[groups] if groups else np.zeros(0, dtype=np.int64)
    noisy = np.concatenate(noisy_parts) if noisy_parts else np.zeros(0)
    std = np.repeat(np.asarray(stds, dtype=np.float64), sizes)
    halfwidth = interval_halfwidth(std, confidence)
    if len(query_index):
        encoded = encode(synthetic_frame, domain)
        synthetic = backend_module.answers_exact(encoded.codes, encoded.numerics,
                                                 queries.take_groups(np.asarray(groups)))
    else:
        synthetic = np.zeros(0)
    measurements = pl.DataFrame({
        "round": np.repeat(np.asarray(rounds, dtype=np.int64), sizes),
        "query_class": [QueryClass.SHORT[c] for c in queries.query_class[query_index]],
        "group": np.repeat(np.asarray(groups, dtype=np.int64), sizes),
        "query": query_index,
        "description": describe_queries(queries, domain, query_index),
        "noisy_answer": noisy,
        "noise_std": std,
        "ci_low": noisy - halfwidth,
        "ci_high": noisy + halfwidth,
        "synthetic_answer": np.asarray(synthetic, dtype=np.float64),
    }, schema_overrides={"query_class": pl.String, "description": pl.String})
    return PrivacyReport(
        epsilon=float(epsilon), delta=float(delta), rho_budget=rho, rho_spent=ledger.rho_spent,
        n_rows=n_rows, events=ledger.events, measurements=measurements, confidence=confidence,
        parameters=parameters,
    )


def _collect(data) -> pl.DataFrame:
    if isinstance(data, pl.DataFrame):
        return data
    if isinstance(data, pl.LazyFrame):
        return data.collect()
    if isinstance(data, (str, os.PathLike)):
        path = Path(data)
        if not path.exists():
            msg = f"no file at {str(path)!r}"
            raise FileNotFoundError(msg)
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            return pl.read_parquet(path)
        if suffix == ".csv":
            return pl.read_csv(path)
        if suffix in (".arrow", ".ipc", ".feather"):
            return pl.read_ipc(path)
        msg = f"cannot read {str(path)!r}: use a .parquet, .csv or .arrow/.ipc file"
        raise ValueError(msg)
    module = type(data).__module__.split(".")[0]
    if module == "pyarrow":
        return pl.from_arrow(data)
    if module == "pandas":
        return pl.from_pandas(data)
    msg = (
        f"data must be a polars DataFrame/LazyFrame, a pyarrow Table, a pandas DataFrame or a "
        f"path to a Parquet/CSV/IPC file. Got {type(data).__name__}"
    )
    raise TypeError(msg)


def _check_positive_finite(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        msg = f"The {name!r} parameter must be a finite float > 0. Got {value!r}"
        raise ValueError(msg)


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        msg = f"The {name!r} parameter must be an int in [{low}, inf). Got {value!r}"
        raise ValueError(msg)
