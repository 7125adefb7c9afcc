"""RAP++ (paper Alg. 2, design.md §4): plan, select, measure, project; then decode.

:func:`synthesize` wires the named parts together:

1. *inputs*: check the parameters, read the schema, privately infer the domains asked for
   (:mod:`polars_rap.privacy.inference`, charged first), build the public domain and the workload,
   and read the public table when one is given (:mod:`polars_rap.public.prior`; free);
2. *plan* (:mod:`polars_rap.fit.planning`): the strategy (:mod:`polars_rap.fit.strategy`) turns public counts into steps, each
   with its share of the budget (``strategy="paper"``: the paper's even split over
   interleaved rounds; ``"planned"``, the default: a budget per query class), and a first
   step measures the null rates the plan would leave unmeasured (:mod:`polars_rap.fit.null_rates`);
3. *answers*: one streaming pass over the real rows (:mod:`polars_rap.io.source`);
4. *loop*: select, measure, project over the plan (:mod:`polars_rap.fit.rounds`);
5. *decode* the relaxed data (:mod:`polars_rap.schema.encoding`) and assemble the *report*
   (:mod:`polars_rap.pipeline.release`).

Selection scores use the *expected* answers of the decoded data: hard thresholds on the
relaxed rows, i.e. the mean over all decodings, rather than one random draw whose sampling
noise (about sqrt(cells / rows) in L1) would swamp the errors being ranked. Both are
post-processing of released values; only the true answers make the scores private.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import warnings
from typing import Any, Mapping, Sequence

import numpy as np
import polars as pl

from polars_rap import kernels
from polars_rap.io.blocks import DEFAULT_BLOCK_ROWS, check_folder, write_relaxed
from polars_rap.schema.domain import Domain, check_declared
from polars_rap.decode.decoding import decode
from polars_rap.errors import DataError
from polars_rap.decode.histogram_margins import histogram_margins
from polars_rap.fit.independence_prior import PriorSettings
from polars_rap.privacy.inference import infer_declarations, inference_requests, needs_approximate_delta
from polars_rap.decode.numeric_pairs import fitted_ties
from polars_rap.decode.numeric_ties import TieSums, release_ties, tie_layout, tie_noise_std
from polars_rap.checks import check_int, check_share
from polars_rap.pipeline.arguments import check_memory, check_synthesis_parameters
from polars_rap.fit.planning import check_rows_against_noise, loop_rho_needed, smallest_share, workload_and_plan
from polars_rap.privacy.ledger import PrivacyLedger, split_budget
from polars_rap.fit.projection import ProjectionConfig, RelaxedParams
from polars_rap.public.labels import LabelModel, check_label_use, label_model_for_release, label_noise_std
from polars_rap.public.prior import PublicTable, check_public_use, default_public_uses, fit_to_public, open_public, read_public
from polars_rap.public.release import PublicRelease
from polars_rap.public.reweight import candidate_rows, check_columns
from polars_rap.fit.public_targets import PublicPrior
from polars_rap.workload.queries import QuerySet
from polars_rap.pipeline.release import build_report
from polars_rap.pipeline.result import SynthesisResult
from polars_rap.fit.loop import run_plan
from polars_rap.privacy.samplers import SecureRandom
from polars_rap.io.source import RowStatistics, exact_answers, without_columns
from polars_rap.io.engines import open_source
from polars_rap.fit.strategy import Strategy, resolve_strategy
from polars_rap.workload.builders import group_sensitivities

__all__ = ["synthesize", "SynthesisResult"]

logger = logging.getLogger(__name__)

_APPROXIMATE_DELTA_SHARE = 0.5
"""Part of delta given to thresholded category inference when a run uses it."""

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
    rounds_lt: int | None = None,
    rounds_mm: int = 0,
    n_linear_thresholds: int = 20_000,
    n_mixed_marginals: int = 2_000,
    max_marginal_cells: int | None = 20_000,
    selection_share: float | None = None,
    confidence: float = 0.95,
    projection: ProjectionConfig | None = None,
    strategy: str | Strategy | Mapping[str, Any] = "planned",
    progress: bool | None = None,
    engine: str = "auto",
    public: pl.DataFrame | pl.LazyFrame | str | os.PathLike | None = None,
    public_use: Sequence[str] | None = None,
    output: str | os.PathLike | None = None,
    output_block_rows: int = DEFAULT_BLOCK_ROWS,
    drop: Sequence[str] = (),
) -> SynthesisResult:
    """Differentially private synthetic data with RAP++.

    Parameters
    ----------
    data : DataFrame, LazyFrame or path to a Parquet/CSV/IPC file
        The sensitive table (a pyarrow Table, a pandas DataFrame or a ``ray.data.Dataset``
        works too; see ``engine``). Read once, in batches
        (:func:`polars_rap.io.source.default_batch_rows`: up to 250,000 rows); a LazyFrame or a
        file streams, so it may be larger than memory. No reference is kept.
    epsilon, delta : float
        The (ε, δ)-DP guarantee (replace-one neighbours, the row count is public).
    domain : mapping
        Public domain of each column: a list of categories (``None`` in it declares nulls),
        ``(lower, upper)`` bounds (dates, datetimes or timedeltas for temporal columns),
        ``{"bounds": (lo, hi), "nullable": True, "scale": "log", "atoms": [0]}`` (a declared
        scale and exact values: :mod:`polars_rap.schema.transforms`), or
        :class:`~polars_rap.Categorical` / :class:`~polars_rap.Numeric`. ``Enum`` and
        ``Boolean`` columns may be left out. Never derive it from the data itself: to learn
        a column's domain from the data, privately, give ``"numeric"``, ``"categorical"``
        or ``{"candidates": [...]}`` (see :mod:`polars_rap.privacy.inference`).
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
        Seed for reproducible research and tests: every stream (workload, initial relaxed
        data, noise, decoding, inference noise) is a child of it, and the exact noise
        samplers read their random bits from a seeded PCG64 generator, which is **not
        secure** (predictable from its outputs; the seed is known). Leave ``None`` for real
        releases: the noise (selection, measurement and inference) then reads the operating
        system's cryptographic source (:class:`~polars_rap.privacy.samplers.SecureRandom`), apart
        from the streams whose outputs are released (workload, initial data, decoding).
    backend : {"auto", "cpu", "cuda"}
        Kernel backend; ``"auto"`` picks CUDA when available, else the CPU.
    relaxed_rows : int
        Rows of the relaxed synthetic data (the paper's n-hat, default 1000).
    queries_per_round : int
        Groups selected per round (K, default 10).
    rounds_cm, rounds_lt, rounds_mm : int
        Rounds spent on categorical marginals (default: the number of categorical feature
        columns), linear thresholds (default: the strategy's, 10 for ``"planned"``, the
        paper's 50 for ``"paper"``) and mixed marginals (default 0). A class
        with G query groups runs at most ceil(G / queries_per_round) rounds, so that no
        round is left with nothing to measure; ``report.parameters["rounds"]`` lists the
        rounds run (a class measured outright by the planned strategy counts one). Whatever
        the rounds, every nullable column's null rate is measured: the plan gains a first
        ``"NR"`` step when it would leave one unmeasured (:mod:`polars_rap.fit.null_rates`).
    n_linear_thresholds, n_mixed_marginals : int
        Size of the random LT and MM workloads the rounds select from.
    max_marginal_cells : int or None
        Categorical marginals with more cells are left out of the workload.
    selection_share : float, optional
        Part of each selection round's budget spent on selection (the rest on measurement).
        None (default): the strategy's own (0.5 for both shipped strategies).
    confidence : float
        Coverage of the report's confidence intervals and error bounds (default 0.95).
    projection : ProjectionConfig, optional
        Optimiser settings.
    strategy : {"planned", "paper"}, a mapping or a strategy object
        How the budget is spent (:mod:`polars_rap.fit.strategy`). ``"planned"`` (default): a
        budget per query class (the categorical marginals twice the others'), a class whose
        rounds would measure every group anyway measured outright (no selection charge),
        measurements weighed by inverse noise variance, controlled decoding. ``"paper"``: the
        paper's Alg. 2 exactly (even split over interleaved rounds, a selection charge in
        each). A mapping such as
        ``{"name": "planned", "class_shares": {"CM": 2, "LT": 1}}`` sets a strategy's options.
    progress : bool, optional
        Show a progress bar (default: when stderr is a terminal).
    engine : {"auto", "polars", "ray"}
        Where the pass over the sensitive rows runs. ``"polars"``: in this process.
        ``"ray"``: per block on a Ray cluster (:mod:`polars_rap.io.ray_engine`; ``data`` a
        ``ray.data.Dataset`` or Parquet paths/URIs), with the same answers, report and rows
        as in process; needs ``pip install 'polars-rap[ray]'``. ``"auto"`` (default): Ray
        for a Ray Dataset, else Polars.
    public : DataFrame, LazyFrame or path to a Parquet/CSV/IPC file, optional
        A *public* table that resembles the sensitive one (last year's release, another
        state's survey), used as a prior (:mod:`polars_rap.public.prior`). It costs no
        budget, so it must truly be public: never a table derived from the sensitive rows.
        It is encoded with the declared domain, never replaces it: its columns are the
        data's or a subset (a missing column is filled from the domain uniformly, and a log
        line says so), and a value outside the domain is a ``DataError`` naming the column.
        The report records its row count and a content hash (``report.public_data``), never
        its rows.
    public_use : sequence of str, optional
        What the public table is used for (default ``["labels"]`` when it holds every label
        column, else ``["init"]``): ``"init"``, the relaxed
        rows start from a sample of its rows; ``"fit"``, they are first fitted to its answers
        on the whole workload; ``"targets"``, each measured answer is pulled toward the
        public answer by a James-Stein factor, which lets the measurement win where the two
        differ beyond its noise (:mod:`polars_rap.fit.public_targets`); ``"selection"``, each
        class's first selection scores against its answers; ``"interactions"``, each
        categorical marginal not measured (yet) is fitted toward the public table's, raked to
        the synthetic margins, its associations scaled by the strength the measured tables
        support (:mod:`polars_rap.fit.independence_prior`; it acts on the tables a strategy
        leaves unmeasured, as the default's annealed rounds do at ε <= 1, in place of the
        prior's own targets; for a public table of the same population only); ``"labels"``,
        after decoding each row's labels are redrawn from the public table's conditional of
        the labels given the other columns, tilted to the synthetic rows' label margins
        (:mod:`polars_rap.public.labels`; needs ``labels`` and a public table holding them;
        the saved model keeps it); ``"reweight"``, after the loop the public rows are raked
        to the synthetic rows' one-way margins, and again to their margins crossed with the
        labels, and one of the two is released instead of the synthetic rows when a private
        check on the marginal tables (the exponential mechanism, 2% of the loop's budget)
        prefers it (:mod:`polars_rap.public.reweight`; the public table must hold every
        column); ``"margins"``, where the budget is small, up to 80% of it measures the one-way
        margins first, the public rows reweighted to fit them all at once (each margin's deviation
        from the public table's under an empirical-Bayes prior) are checked against independence,
        and if they pass they join that check as one more candidate
        (:mod:`polars_rap.public.margins`; every column; for a public table of the same
        population). Only with ``public``.
    output : str or path-like, optional
        A folder (or a ``pyarrow.fs`` URI such as ``s3://bucket/prefix``) to write the
        synthetic rows to as Parquet parts of ``output_block_rows`` rows (default 1,000,000,
        which bounds the writer's memory), block ``i`` decoded from a seed
        of ``(seed, i)`` (:func:`polars_rap.io.blocks.write_parquet`; from Ray tasks when the
        pass ran on Ray), instead of holding them all in memory. It must be new or empty:
        that is checked before any row is read. ``.data`` is then a LazyFrame scanning the
        parts and ``.files`` lists them; the report's answers are read back from them.
    drop : sequence of str
        Columns of ``data`` to leave out (a wide table's identifiers, weights, columns with no
        public domain): never read, and not in the output. The same names are left out of
        ``public`` where it holds them; ``report.parameters["dropped_columns"]`` lists them. A
        name ``data`` lacks, or one that ``domain``, ``labels`` or ``infer_domain`` also names,
        is a ``ParameterError``. A Python caller may as well pass ``data.drop(...)``; this is
        for a path, a config file's ``[options]`` and the command line.

    Returns
    -------
    SynthesisResult
        ``.data`` (pl.DataFrame; with ``output``, a LazyFrame over ``.files``) and ``.report``
        (:class:`~polars_rap.privacy.report.PrivacyReport`).

    Raises
    ------
    ParameterError
        A bad setting: a parameter, the ``domain=`` declaration or ``labels`` (a
        ``ValueError``; :class:`~polars_rap.errors.ParameterTypeError`, also a ``TypeError``,
        for ``data`` of an unsupported type and declarations of the wrong type).
    DataError
        Data that do not fit the declared domain (an undeclared category, null or infinity, a
        column of the wrong dtype or missing), no rows, or too few rows for the plan's noise.
        The message is for the curator; it never enters a release. A ``public`` table that does
        not fit the domain raises it too ("the public table: ...").
    BudgetExceededError
        A charge would exceed the budget (a bug if it happens: the plan stays within it).
    FileNotFoundError
        ``data`` is a path with no file.

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
    check_synthesis_parameters(
        epsilon=epsilon, delta=delta, domain=domain, labels=labels, infer_domain=infer_domain,
        inference_share=inference_share, rows=rows, seed=seed, relaxed_rows=relaxed_rows,
        queries_per_round=queries_per_round, rounds_cm=rounds_cm, rounds_lt=rounds_lt, rounds_mm=rounds_mm,
        n_linear_thresholds=n_linear_thresholds, n_mixed_marginals=n_mixed_marginals,
        max_marginal_cells=max_marginal_cells, projection=projection, drop=drop,
    )
    strategy = resolve_strategy(strategy)
    if selection_share is None:
        selection_share = strategy.selection_share
    check_share("selection_share", selection_share)
    if isinstance(labels, str):
        labels = [labels]
    drop = [drop] if isinstance(drop, str) else list(drop)
    projection = projection or ProjectionConfig()
    if projection.warm_doublings is None and strategy.warm_doublings is not None:  # the strategy's schedule
        projection = dataclasses.replace(projection, warm_doublings=strategy.warm_doublings)
    if projection.max_steps is None and strategy.max_steps is not None:  # the strategy's stage length
        projection = dataclasses.replace(projection, max_steps=strategy.max_steps)
    backend_module = kernels.resolve_backend(backend)
    public_uses = check_public_use(public, public_use)
    if output is not None:
        check_int("output_block_rows", output_block_rows, 1)
        check_folder(output)  # before any row is read: a fit is never lost to a folder in use

    # 1. inputs: schema, private domain inference (charged first), public domain, workload
    source = open_source(data, domain, engine)  # a CSV's dtypes come from the domain, never its rows
    public_source = None if public is None else open_public(public, domain, list(source.schema), drop)
    source = without_columns(source, drop, present_only=public is not None)  # open_public checked the names
    if not source.schema:
        msg = "the data has no columns; synthesize needs at least one, with a declared domain"
        raise DataError(msg)
    declared, requests = inference_requests(source.schema, domain, infer_domain, labels=labels)
    check_declared(source.schema, declared, labels, pending=[r.name for r in requests])  # before any row is read
    if public_source is not None and public_use is None:
        public_uses = default_public_uses(labels or (), list(public_source.schema))
    if "labels" in public_uses:  # from the public table's schema: before a row of either table is read
        check_label_use(labels or (), list(public_source.schema))
    checked_uses = [use for use in ("reweight", "margins") if use in public_uses]  # public rows may be released
    if checked_uses:  # likewise: released public rows must hold every column
        check_columns([name for name in source.schema if name not in public_source.schema], checked_uses[0])
    approximate_share = _APPROXIMATE_DELTA_SHARE if needs_approximate_delta(requests) else 0.0
    budget = split_budget(epsilon, delta, approximate_share)
    ledger = PrivacyLedger(budget.rho, budget.approximate_delta)
    # the ties' noise has a stream of its own, so that with a seed the loop's noise is the same with and without them
    workload_rng, init_rng, noise_rng, decode_rng, inference_rng, label_rng, reweight_rng, tie_rng = (
        np.random.default_rng(seed).spawn(8))
    if seed is None:  # a release: the noise reads the OS's cryptographic source, no seed at all
        noise_rng, inference_rng, tie_rng = SecureRandom(), SecureRandom(), SecureRandom()
    if requests:  # one private pass over the inferred columns, charged before the domain exists
        declared.update(infer_declarations(
            source.inference_counts(requests), source.schema,
            requests, inference_share * budget.rho, ledger, inference_rng,
        ))
    public_domain = Domain.from_mapping(source.schema, declared, labels)
    check_memory(relaxed_rows=relaxed_rows, n_coords=public_domain.n_categorical_coords
                 + len(public_domain.numeric_columns), n_numeric=len(public_domain.numeric_columns),
                 n_columns=len(public_domain.columns), rows=rows, n_linear_thresholds=n_linear_thresholds,
                 n_mixed_marginals=n_mixed_marginals)
    # the public table, read freely (no charge) and checked before the pass over the sensitive rows
    public_table = None if public_source is None else read_public(
        public_source, public_domain, integer_cells=strategy.integer_cells)

    # 2. workload and plan: public values only
    queries, plan, group_counts = workload_and_plan(
        public_domain, strategy, workload_rng, rounds_cm=rounds_cm, rounds_lt=rounds_lt,
        rounds_mm=rounds_mm, queries_per_round=queries_per_round, n_mixed_marginals=n_mixed_marginals,
        n_linear_thresholds=n_linear_thresholds, max_marginal_cells=max_marginal_cells,
    )

    # 3. the one pass over the real rows (streamed in batches; the numeric ties' sums read in it); it raises
    # for an empty input
    tie_share = getattr(strategy, "tie_share", 0.0)
    # with each row's fitted numerics kept ("fitted") nothing would follow the ties: they are not measured
    layout = None
    if tie_share > 0.0 and strategy.numeric_coupling == "label":  # with the numeric pairs' tables by bins
        layout = tie_layout(public_domain, getattr(strategy, "tie_numeric_bins", 0))
    tie_totals = None if layout is None else TieSums(public_domain, layout)
    public_release = PublicRelease.for_uses(public_uses, public_table, public_domain)  # rows it may release
    statistics = [part for part in (tie_totals, public_release.counts) if part is not None]
    true_answers, n_rows = exact_answers(source, public_domain, queries, backend_module,
                                         integer_cells=strategy.integer_cells,
                                         statistic=RowStatistics(tuple(statistics)) if statistics else None)
    out_rows = n_rows if rows is None else int(rows)
    l1_sensitivity, l2_sensitivity = group_sensitivities(queries, n_rows)
    # "margins" measured (where the budget is small) and the public check charged: before the loop
    thinnest = smallest_share(plan, queries, queries_per_round, strategy.size_exponent)
    loop_floor = loop_rho_needed(n_rows, plan, thinnest, selection_share) / (1.0 - tie_share)  # the ties come first

    def dry_run(answers: np.ndarray, rho: float, rng: np.random.Generator) -> np.ndarray:
        """The loop's plan on ``answers`` as if they were the private table's, at ``rho`` with a
        ledger of its own: what the margins' check weighs the public rows against."""
        start = RelaxedParams.random(relaxed_rows, public_domain.block_sizes, len(public_domain.numeric_columns), rng)
        return run_plan(plan, queries, answers, l1_sensitivity, l2_sensitivity, PrivacyLedger(rho), start,
                        backend_module, projection, rng, n_rows=n_rows, selection_share=selection_share,
                        inverse_variance=strategy.inverse_variance, shrinkage=strategy.shrinkage,
                        size_exponent=strategy.size_exponent, noise_aware=strategy.noise_aware,
                        independence=_prior_settings(strategy), progress=False).params.relaxed()

    public_release.before_loop(queries, true_answers, l1_sensitivity, n_rows, candidate_rows(out_rows, relaxed_rows),
                               loop_floor, ledger, backend_module, noise_rng, reweight_rng, dry_run)
    tie_release, tie_rho = None, tie_share * ledger.rho_remaining
    cap = getattr(strategy, "tie_noise_cap", None)
    if layout is not None:
        tie_std = tie_noise_std(layout, n_rows, tie_rho)  # public values
        if cap is None or tie_std <= cap:
            # released now, fitted to the loop's rows after it
            tie_release = release_ties(tie_totals.totals, n_rows, layout, tie_rho, ledger, tie_rng)
        else:
            logger.info("numeric ties not measured: their noise std per cell would be %.3g, above tie_noise_cap=%g",
                        tie_std, cap)
    check_rows_against_noise(n_rows, ledger.rho_remaining, plan, thinnest, queries_per_round,
                              selection_share, epsilon)
    if delta >= 1.0 / n_rows:
        warnings.warn(
            f"delta={delta:g} is at least 1/n = {1.0 / n_rows:.3g}: at that level a mechanism "
            "could publish a whole row and still meet (epsilon, delta)-DP. Use delta well "
            f"below 1/n, e.g. 1/n^2 = {1.0 / n_rows**2:.3g}",
            UserWarning, stacklevel=2,
        )

    # 4. select, measure, project
    params, prior = _starting_point(public_table, public_uses, public_domain, queries, relaxed_rows,
                                    backend_module, projection, init_rng)
    record = run_plan(
        plan, queries, true_answers, l1_sensitivity, l2_sensitivity, ledger, params,
        backend_module, projection, noise_rng, n_rows=n_rows, selection_share=selection_share,
        inverse_variance=strategy.inverse_variance, shrinkage=strategy.shrinkage,
        size_exponent=strategy.size_exponent, noise_aware=strategy.noise_aware, prior=prior,
        independence=_prior_settings(strategy), progress=sys.stderr.isatty() if progress is None else progress,
    )
    relaxed = record.params.relaxed()
    # the public rows raked to the loop's or the measured margins, released if the check prefers them
    relaxed, reweight_record = public_release.after_loop(relaxed, queries, true_answers, l1_sensitivity, n_rows,
                                                         backend_module, noise_rng, reweight_rng)
    del true_answers

    # 5. decode (here, or block by block into ``output``; labels from the public table's model) and report
    label_model = None if "labels" not in public_uses else label_model_for_release(
        public_table, public_domain, relaxed, label_noise_std(record.groups, record.noise_stds, queries, public_domain),
        label_rng)
    # Numerics permuted within each label and moved toward its released histograms keep each label's measured
    # numerics; after a public label model's redraw they act on the new labels, whose rows otherwise carry the
    # other label's numerics (MM 1.4x, LT 2.1x at eps 1: public_labels_fitted.md). Released public rows ("reweight",
    # when its check chose them) stay as they are; when it kept the loop's rows, those decode as without a public table.
    keeps_rows = (reweight_record or {}).get("reweight_released", "synthetic rows") != "synthetic rows"
    numeric_coupling = "fitted" if keeps_rows else strategy.numeric_coupling
    margins = None if keeps_rows else histogram_margins(record, queries, getattr(strategy, "histogram_match", None))
    ties = None
    if tie_release is not None and numeric_coupling == "label":
        # the numeric pairs' test reads each earlier column's counts by bin from its released histogram (any band)
        histograms = None if getattr(strategy, "tie_pair_counts", "relaxed") != "histograms" else (
            margins if margins is not None else histogram_margins(record, queries, 0.0))
        ties = fitted_ties(relaxed, public_domain, layout, *tie_release, histograms=histograms,
                           separation=getattr(strategy, "tie_pair_separation", 0.0))
    files = None
    if output is None:
        synthetic_frame = decode(relaxed, public_domain, out_rows, decode_rng, method=strategy.decoding,
                                 labels=label_model, numeric_coupling=numeric_coupling, margins=margins,
                                 ties=ties)
    else:  # from Ray tasks when the pass ran on Ray
        from polars_rap.io.ray_engine import RaySource  # no Ray import: it is read lazily

        files = write_relaxed(relaxed, public_domain, output, out_rows, decoding=strategy.decoding,
                              seed=None if seed is None else int(decode_rng.integers(2**63)),
                              block_rows=output_block_rows,
                              engine="ray" if isinstance(source, RaySource) else "polars", labels=label_model,
                              numeric_coupling=numeric_coupling, margins=margins, ties=ties)
        synthetic_frame = pl.scan_parquet(files)
    described = strategy.describe()
    if "numeric_coupling" in described:  # the strategy's settings as they ran: with released public rows, "fitted"
        described["numeric_coupling"] = numeric_coupling
    steps_run = {c: sum(1 for s in plan if s.query_class == c) for c in group_counts}  # "NR" when added
    steps_run.update(record.class_rounds)  # an annealed class: the rounds it ran (released)
    report = build_report(
        budget, ledger, n_rows, queries, public_domain, plan, record, synthetic_frame,
        backend_module, confidence, integer_cells=strategy.integer_cells,
        parameters=dict(
            relaxed_rows=relaxed_rows, queries_per_round=queries_per_round, rounds=steps_run,
            n_linear_thresholds=n_linear_thresholds, n_mixed_marginals=n_mixed_marginals,
            max_marginal_cells=max_marginal_cells, selection_share=selection_share,
            inferred_columns=[r.name for r in requests], inference_share=inference_share if requests else 0.0,
            labels=list(public_domain.labels), rows=out_rows, backend=backend_module.__name__.rsplit(".", 1)[-1],
            strategy=described, decoding=strategy.decoding, numeric_coupling=numeric_coupling,
            warm_doublings=projection.warm_doublings, max_steps=projection.stage_steps,
            dropped_columns=drop,
        ),
        public_data=_public_record(public_table, public_uses, prior, label_model, reweight_record),
    )
    return SynthesisResult(synthetic_frame, report, public_domain, relaxed, files, label_model, margins, ties)


# ---------------------------------------------------------------- helpers
def _starting_point(public_table: PublicTable | None, uses: Sequence[str], domain: Domain, queries: QuerySet,
                    relaxed_rows: int, backend, projection: ProjectionConfig,
                    rng: np.random.Generator) -> tuple[RelaxedParams, PublicPrior | None]:
    """The relaxed rows the loop starts from (uniformly random, or from the public table) and
    the public answers the loop uses (None without ``"targets"``, ``"selection"`` or
    ``"interactions"``).
    Public values only: nothing here reads the sensitive rows or charges the budget."""
    if public_table is not None and "init" in uses:
        params = public_table.relaxed_params(relaxed_rows, domain, rng)
    else:
        params = RelaxedParams.random(relaxed_rows, domain.block_sizes, len(domain.numeric_columns), rng)
    if public_table is None or not {"fit", "targets", "selection", "interactions"} & set(uses):
        return params, None
    answers = public_table.answers(queries, domain, backend)
    if "fit" in uses:
        params = fit_to_public(params, queries, answers, backend, projection)
    if not {"targets", "selection", "interactions"} & set(uses):
        return params, None
    return params, PublicPrior(answers, targets="targets" in uses, selection="selection" in uses,
                               interactions="interactions" in uses)


def _prior_settings(strategy: Strategy) -> PriorSettings | None:
    """The independence prior's settings from the strategy's (None: no prior)."""
    if not strategy.independence_prior:
        return None
    mediated = strategy.independence_prior == "mediated"
    return PriorSettings(mediated=mediated, mediator_gate=strategy.mediator_gate if mediated else None)


def _public_record(public_table: PublicTable | None, uses: Sequence[str], prior: PublicPrior | None,
                   label_model: LabelModel | None, reweight: dict | None = None) -> dict | None:
    """The report's record of the public table (:meth:`PublicTable.record`), with the mean
    James-Stein factor per class when its answers were targets and the label model's ridge
    and share of redrawn rows when it drew the labels; None without one."""
    if public_table is None:
        return None
    record = public_table.record(uses)
    if prior is not None and prior.targets:
        record["target_factors"] = dict(prior.factors)
    if label_model is not None:
        record.update(label_ridge=label_model.ridge, label_share=label_model.share)
    if reweight is not None:
        record.update(reweight)
    return record
