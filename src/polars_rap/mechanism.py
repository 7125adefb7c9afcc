"""RAP++ (paper Alg. 2, design.md §4): select, measure, project; then decode.

The zCDP budget ``rho`` from (ε, δ) is split evenly over ``T`` rounds; each round spends
``selection_share`` of its part on one-shot Gumbel top-K selection of ``K`` groups not yet
measured (by the L1 error of the current synthetic data) and the rest on Gaussian
measurements of those groups, split evenly; the relaxed data is then projected onto all
measurements so far, warm-started. Rounds of the query classes (categorical marginals,
linear thresholds, mixed marginals) are interleaved evenly.

Before the loop, columns whose domain is to be learned (``infer_domain``) are inferred
privately in one pass (:mod:`polars_rap.inference`), charged to the same ledger; the exact
answers are then computed in one streaming pass (:mod:`polars_rap.source`). The report keeps
what each Gumbel round released, to bound the error of the groups never measured.

Selection scores use the *expected* answers of the decoded data: hard thresholds on the
relaxed rows, i.e. the mean over all decodings, rather than one random draw whose sampling
noise (about sqrt(cells / rows) in L1) would swamp the errors being ranked. Both are
post-processing of released values; only the true answers make the scores private.
"""

from __future__ import annotations

import importlib.util
import logging
import math
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

if importlib.util.find_spec("ipywidgets") is not None:  # notebook bar in notebooks, text elsewhere
    from tqdm.auto import tqdm
else:  # tqdm.auto would warn at import that ipywidgets is missing
    from tqdm import tqdm

from polars_rap import kernels
from polars_rap.domain import Domain
from polars_rap.encoding import decode
from polars_rap.model import SyntheticModel
from polars_rap.inference import infer_declarations, inference_requests, needs_approximate_delta
from polars_rap.privacy import (
    PrivacyLedger,
    gaussian_mechanism,
    gumbel_scale,
    gumbel_top_k,
    split_budget,
)
from polars_rap.projection import ProjectionConfig, RelaxedParams, project
from polars_rap.queries import QueryClass, QuerySet, group_l1
from polars_rap.report import (
    PrivacyReport,
    SelectionRecord,
    interval_halfwidth,
    simultaneous_halfwidth,
    unmeasured_error_bounds,
)
from polars_rap.source import MAX_BATCH_ROWS, DataSource, exact_answers
from polars_rap.workload import build_workload, describe_queries, group_sensitivities

__all__ = ["synthesize", "SynthesisResult"]

logger = logging.getLogger(__name__)

_APPROXIMATE_DELTA_SHARE = 0.5
"""Part of delta given to thresholded category inference when a run uses it."""
_MAX_NOISE_STD = 0.5
"""Largest planned noise std of a measured answer (a fraction in [0, 1]) a run accepts."""

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

    @property
    def model(self) -> SyntheticModel:
        """The released part as a :class:`~polars_rap.model.SyntheticModel`: sample more rows
        from it (``res.model.sample(rows, seed=...)``) at no privacy cost."""
        return SyntheticModel(self.relaxed, self.domain, self.report)

    def save(self, path: str | os.PathLike[str], overwrite: bool = False) -> Path:
        """Save :attr:`model` as a directory (see :mod:`polars_rap.model`); load it back with
        :func:`polars_rap.load`. Returns the directory."""
        return self.model.save(path, overwrite=overwrite)


def synthesize(
    data: pl.DataFrame | pl.LazyFrame | str | os.PathLike,
    *,
    epsilon: float,
    delta: float,
    domain: Mapping[str, Any] | None = None,
    labels: Sequence[str] = (),
    infer_domain: bool | Sequence[str] = False,
    inference_share: float = 0.1,
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
        The sensitive table (a pyarrow Table or pandas DataFrame works too). Read once, in
        batches (:func:`polars_rap.source.default_batch_rows`: up to 250,000 rows); a
        LazyFrame or a file streams, so it may be larger than memory. No reference is kept.
    epsilon, delta : float
        The (ε, δ)-DP guarantee (replace-one neighbours, the row count is public).
    domain : mapping
        Public domain of each column: a list of categories (``None`` in it declares nulls),
        ``(lower, upper)`` bounds, ``{"bounds": (lo, hi), "nullable": True}``, or
        :class:`~polars_rap.Categorical` / :class:`~polars_rap.Numeric`. ``Enum`` and
        ``Boolean`` columns may be left out. Never derive it from the data itself: to learn
        a column's domain from the data, privately, give ``"numeric"``, ``"categorical"``
        or ``{"candidates": [...]}`` (see :mod:`polars_rap.inference`).
    labels : sequence of str
        Categorical target columns; the workload is conditioned on them.
    infer_domain : bool or sequence of str
        Learn the domain of undeclared columns (``True``: all of them; or the names given)
        privately, by their dtype: text columns get categories, numeric columns bounds.
        Charged to the same budget and listed in the report; off by default.
    inference_share : float
        Part of the zCDP budget spent on domain inference when any column uses it (default
        0.1, split evenly over those columns). Thresholded category inference also takes
        half of ``delta`` (see ``report.conversion_delta`` / ``approximate_delta``).
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
        columns), linear thresholds (default 50) and mixed marginals (default 0). A class
        with G query groups runs at most ceil(G / queries_per_round) rounds, so that no
        round is left with nothing to measure; ``report.parameters["rounds"]`` lists the
        rounds run.
    n_linear_thresholds, n_mixed_marginals : int
        Size of the random LT and MM workloads the rounds select from.
    max_marginal_cells : int or None
        Categorical marginals with more cells are left out of the workload.
    selection_share : float
        Part of each round's budget spent on selection (the rest on measurement).
    confidence : float
        Coverage of the report's confidence intervals and error bounds (default 0.95).
    projection : ProjectionConfig, optional
        Optimiser settings.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).

    Returns
    -------
    SynthesisResult
        ``.data`` (pl.DataFrame) and ``.report`` (:class:`~polars_rap.report.PrivacyReport`).

    Examples
    --------
    Tiny data and settings, so that the example runs in a blink; real runs keep the defaults.

    >>> import polars as pl, polars_rap
    >>> df = pl.DataFrame({"age": [23, 35, 47, 59] * 50, "sex": ["F", "M"] * 100})
    >>> res = polars_rap.synthesize(
    ...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]},
    ...     relaxed_rows=20, rounds_lt=2, n_linear_thresholds=20, seed=0, progress=False)
    >>> res.data.shape, res.data.schema == df.schema
    ((200, 2), True)
    >>> res.report.rho_spent <= res.report.rho_budget
    True
    >>> res.model.sample(1000, seed=0).height  # more rows, no privacy cost
    1000
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
    if isinstance(inference_share, bool) or not isinstance(inference_share, (int, float)) or not 0.0 < inference_share < 1.0:
        msg = f"The 'inference_share' parameter must be in (0, 1). Got {inference_share!r}"
        raise ValueError(msg)
    projection = projection or ProjectionConfig()
    backend_module = kernels.resolve_backend(backend)

    source = DataSource.from_input(data)
    declared, requests = inference_requests(source.schema, domain, infer_domain)
    approximate_share = _APPROXIMATE_DELTA_SHARE if needs_approximate_delta(requests) else 0.0
    budget = split_budget(epsilon, delta, approximate_share)
    ledger = PrivacyLedger(budget.rho, budget.approximate_delta)
    workload_rng, init_rng, noise_rng, decode_rng, inference_rng = np.random.default_rng(seed).spawn(5)
    if requests:  # one private pass over the inferred columns, charged before the domain exists
        declared.update(infer_declarations(
            source.batches([r.name for r in requests], MAX_BATCH_ROWS), source.schema,
            requests, inference_share * budget.rho, ledger, inference_rng,
        ))
    public_domain = Domain.from_mapping(source.schema, declared, labels)
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
    # A round needs a group left to measure: a class with G groups gets at most ceil(G / K)
    # rounds, so no scheduled round is empty and its share of the budget is never stranded.
    planned = {
        c: min(r, -(-int(np.count_nonzero(group_class == _CLASS_CODES[c])) // queries_per_round))
        for c, r in planned.items()
    }
    schedule = _interleave(planned)
    if not schedule:
        msg = (
            "the workload is empty: the domain needs categorical feature columns (for "
            "marginals) or numeric columns (for thresholds), and at least one round"
        )
        raise ValueError(msg)

    # The one pass over the real rows (streamed in batches); it raises for an empty input.
    true_answers, n_rows = exact_answers(source, public_domain, queries, backend_module)
    out_rows = n_rows if rows is None else int(rows)
    _check_rows_against_noise(n_rows, ledger.rho_remaining, len(schedule), queries_per_round,
                              selection_share, epsilon)
    if delta >= 1.0 / n_rows:
        warnings.warn(
            f"delta={delta:g} is at least 1/n = {1.0 / n_rows:.3g}: at that level a mechanism "
            "could publish a whole row and still meet (epsilon, delta)-DP. Use delta well "
            f"below 1/n, e.g. 1/n^2 = {1.0 / n_rows**2:.3g}",
            UserWarning, stacklevel=2,
        )
    l1_sensitivity, l2_sensitivity = group_sensitivities(queries, n_rows)
    rho = budget.rho
    params = RelaxedParams.random(relaxed_rows, public_domain.block_sizes,
                                  len(public_domain.numeric_columns), init_rng)
    measured_groups: list[int] = []
    measured_round: list[int] = []
    noisy_parts: list[np.ndarray] = []
    noise_stds: list[float] = []
    available = np.ones(queries.n_groups, dtype=bool)
    selections: dict[str, SelectionRecord] = {}  # the last Gumbel round of each class
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
        errors = group_l1(true_answers[queries.group_query_indices(candidates)] - synthetic,
                           queries.group_sizes[candidates])
        chosen_by_gumbel = k < len(candidates)
        if chosen_by_gumbel:
            selection_l1 = float(l1_sensitivity[candidates].max())
            selected_local = gumbel_top_k(
                errors, k, selection_l1, selection_share * round_rho,
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
        if chosen_by_gumbel:
            selections[class_name] = _selection_record(
                round_index, class_name, queries, candidates, synthetic, selected_local,
                gumbel_scale(selection_l1, selection_share * round_rho, k),
                noisy_parts[-len(selected):], noise_stds[-len(selected):],
            )
        measured = queries.take_groups(np.asarray(measured_groups))
        params, trace = project(params, measured, np.concatenate(noisy_parts), backend_module,
                               projection, anneal=class_name != "CM")
        bar.set_postfix(cls=class_name, loss=f"{trace.exact_loss:.3g}", stages=trace.stages,
                        rho=f"{ledger.rho_spent:.3g}/{rho:.3g}")
        logger.debug(
            "round %d (%s): measured %d groups, %d Adam steps in %d temperature stages, "
            "exact loss %.4g, rho spent %.6g of %.6g", round_index, class_name, len(selected),
            trace.steps, trace.stages, trace.exact_loss, ledger.rho_spent, rho,
        )
    bar.close()
    del true_answers

    relaxed = params.relaxed()
    synthetic_frame = decode(relaxed, public_domain, out_rows, decode_rng)
    report = _build_report(
        budget, ledger, n_rows, queries, public_domain, measured_groups,
        measured_round, noisy_parts, noise_stds, selections, synthetic_frame, backend_module, confidence,
        parameters=dict(
            relaxed_rows=relaxed_rows, queries_per_round=queries_per_round, rounds=planned,
            n_linear_thresholds=n_linear_thresholds, n_mixed_marginals=n_mixed_marginals,
            max_marginal_cells=max_marginal_cells, selection_share=selection_share,
            inferred_columns=[r.name for r in requests], inference_share=inference_share if requests else 0.0,
            labels=list(public_domain.labels), rows=out_rows, backend=backend_module.__name__.rsplit(".", 1)[-1],
        ),
    )
    return SynthesisResult(synthetic_frame, report, public_domain, relaxed)


# ---------------------------------------------------------------- helpers
def _interleave(rounds: Mapping[str, int]) -> list[str]:
    """Spread each class's rounds evenly over the schedule (deterministic)."""
    slots = [((i + 0.5) / count, name) for name, count in rounds.items() for i in range(count)]
    return [name for _, name in sorted(slots, key=lambda s: (s[0], s[1]))]


def _selection_record(round_index, class_name, queries: QuerySet, candidates, synthetic,
                      selected_local, scale, noisy_parts, stds) -> SelectionRecord:
    """Keep what a Gumbel round released and compared against, for the unmeasured bounds."""
    sizes = queries.group_sizes[candidates]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    gaps = np.array([
        np.abs(noisy - synthetic[starts[i]:starts[i + 1]]).sum()
        for i, noisy in zip(selected_local, noisy_parts, strict=True)
    ])
    return SelectionRecord(
        round=round_index, query_class=class_name, candidates=np.asarray(candidates, dtype=np.int64),
        candidate_answers=np.asarray(synthetic, dtype=np.float64), gumbel_scale=float(scale),
        selected=np.asarray(candidates[selected_local], dtype=np.int64),
        selected_gap=gaps, selected_std=np.asarray(stds, dtype=np.float64),
        selected_size=np.asarray(sizes[selected_local], dtype=np.int64),
    )


def _build_report(budget, ledger, n_rows, queries: QuerySet, domain, groups, rounds, noisy_parts,
                  stds, selections, synthetic_frame, backend_module, confidence, parameters):
    query_index = queries.group_query_indices(np.asarray(groups, dtype=np.int64))
    sizes = queries.group_sizes[groups] if groups else np.zeros(0, dtype=np.int64)
    noisy = np.concatenate(noisy_parts) if noisy_parts else np.zeros(0)
    std = np.repeat(np.asarray(stds, dtype=np.float64), sizes)
    halfwidth = interval_halfwidth(std, confidence)
    joint_halfwidth = simultaneous_halfwidth(std, confidence, len(noisy))
    # The returned rows' answers on the whole workload, in one batched pass (bounded memory).
    all_synthetic, _ = exact_answers(DataSource.from_input(synthetic_frame), domain, queries, backend_module)

    def synthetic_answers(group_ids) -> np.ndarray:
        return all_synthetic[queries.group_query_indices(np.asarray(group_ids, dtype=np.int64))]

    synthetic = synthetic_answers(groups)
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
        "ci_low_simultaneous": noisy - joint_halfwidth,
        "ci_high_simultaneous": noisy + joint_halfwidth,
        "synthetic_answer": synthetic,
        "error_bound": np.abs(synthetic - noisy) + halfwidth,
    }, schema_overrides={"query_class": pl.String, "description": pl.String})
    unmeasured, note = _unmeasured_bounds(queries, domain, selections, synthetic_answers, confidence)
    return PrivacyReport(
        epsilon=budget.epsilon, delta=budget.delta, rho_budget=budget.rho,
        rho_spent=ledger.rho_spent, n_rows=n_rows, events=ledger.events,
        measurements=measurements, confidence=confidence, parameters=parameters,
        conversion_delta=budget.conversion_delta, approximate_delta=budget.approximate_delta,
        unmeasured=unmeasured, unmeasured_note=note,
    )


def _unmeasured_bounds(queries: QuerySet, domain, selections, synthetic_answers, confidence):
    """The unmeasured groups' error bounds (a frame) and a note on which have none, and why."""
    parts = []
    for record in selections.values():
        bounds = unmeasured_error_bounds(record, queries.group_sizes,
                                         synthetic_answers(record.candidates), confidence)
        groups = record.candidates[record.unmeasured]
        first_query = queries.group_offsets[groups]
        parts.append(pl.DataFrame({
            "query_class": [record.query_class] * len(groups),
            "group": groups,
            "description": describe_queries(queries, domain, first_query),
            "round": np.full(len(groups), record.round, dtype=np.int64),
            "error_bound": bounds,
        }, schema_overrides={"query_class": pl.String, "description": pl.String}))
    schema = {"query_class": pl.String, "group": pl.Int64, "description": pl.String,
              "round": pl.Int64, "error_bound": pl.Float64}
    frame = pl.concat(parts) if parts else pl.DataFrame(schema=schema)
    note = (
        "Bounds cover the workload's groups never measured, from the last selection each "
        "competed in; queries outside the workload (e.g. marginals over max_marginal_cells "
        "cells, classes with no rounds) have none."
    )
    return frame.cast(schema), note


def _check_rows_against_noise(n_rows: int, rho: float, n_rounds: int, queries_per_round: int,
                              selection_share: float, epsilon: float) -> None:
    """Refuse a run whose planned measurement noise swamps every answer.

    With an even split, each measured group gets ``rho (1 - selection_share) / (T K)``; a
    marginal cell then carries noise of std ``1 / (n sqrt(rho_g))`` (design.md §5b). Answers
    are fractions in [0, 1]: past a std of 0.5 nothing can be learned. The row count is public.
    """
    rho_group = rho * (1.0 - selection_share) / (n_rounds * queries_per_round)
    noise_std = 1.0 / (n_rows * math.sqrt(rho_group))
    if noise_std > _MAX_NOISE_STD:
        minimum = math.ceil(1.0 / (_MAX_NOISE_STD * math.sqrt(rho_group)))
        msg = (
            f"{n_rows} rows are too few for epsilon={epsilon:g} over {n_rounds} rounds of "
            f"{queries_per_round} queries: each measured answer (a fraction in [0, 1]) would "
            f"carry noise of std {noise_std:.2g} > {_MAX_NOISE_STD}. This plan needs at least "
            f"{minimum} rows; or raise epsilon, or lower the rounds (rounds_cm, rounds_lt, "
            "rounds_mm) or queries_per_round"
        )
        raise ValueError(msg)


def _check_positive_finite(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        msg = f"The {name!r} parameter must be a finite float > 0. Got {value!r}"
        raise ValueError(msg)


def _check_int(name: str, value, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        msg = f"The {name!r} parameter must be an int in [{low}, inf). Got {value!r}"
        raise ValueError(msg)
