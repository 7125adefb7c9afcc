"""RAP++ (paper Alg. 2): :func:`synthesize`, the one place the pipeline's stages are wired, in order.

1. check the arguments (:mod:`polars_rap.pipeline.arguments`): public values, nothing read;
2. the inputs (:mod:`polars_rap.pipeline.inputs`): the schema, the domains inferred privately
   (charged first), the public domain and the public table;
3. the plan (:mod:`polars_rap.fit.planning`): the workload and the strategy's steps, each with its
   share of the budget, from public values only;
4. one pass over the sensitive rows, then the fit on its answers (:mod:`polars_rap.pipeline.fitting`):
   the public table's check, the numeric ties, and select / measure / project over the plan;
5. decoding (:mod:`polars_rap.pipeline.decoding`) and the report (:mod:`polars_rap.pipeline.release`),
   post-processing of released values.

Selection scores use the *expected* answers of the decoded data: hard thresholds on the
relaxed rows, i.e. the mean over all decodings, rather than one random draw whose sampling
noise (about sqrt(cells / rows) in L1) would swamp the errors being ranked. Both are
post-processing of released values; only the true answers make the scores private.
"""

from __future__ import annotations

import os
from typing import Any, Mapping, Sequence

import polars as pl

from polars_rap.fit.planning import workload_and_plan
from polars_rap.fit.strategy import Strategy
from polars_rap.io.blocks import DEFAULT_BLOCK_ROWS
from polars_rap.pipeline.arguments import check_arguments
from polars_rap.pipeline.decoding import decode_release
from polars_rap.pipeline.fitting import Workload, answer_workload, fit_relaxed
from polars_rap.pipeline.inputs import open_inputs
from polars_rap.pipeline.release import release_report
from polars_rap.pipeline.result import SynthesisResult
from polars_rap.pipeline.streams import RandomStreams

__all__ = ["synthesize", "SynthesisResult"]


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
    confidence: float = 0.95,
    strategy: str | Strategy | Mapping[str, Any] = "planned",
    progress: bool | None = None,
    engine: str = "auto",
    public: pl.DataFrame | pl.LazyFrame | str | os.PathLike | None = None,
    public_use: Sequence[str] | None = None,
    output: str | os.PathLike | None = None,
    output_block_rows: int = DEFAULT_BLOCK_ROWS,
    drop: Sequence[str] = (),
    constraints: str | pl.Expr | Sequence[str | pl.Expr] | Mapping[str, str | pl.Expr] | None = None,
    **moved: Any,
) -> SynthesisResult:
    """Differentially private synthetic data with RAP++.

    Parameters
    ----------
    data : DataFrame, LazyFrame or path to a Parquet/CSV/IPC file
        The sensitive table (a pyarrow Table, a pandas DataFrame or a ``ray.data.Dataset``
        works too; see ``engine``). A path may be a glob pattern (``"parts/*.parquet"``) or a
        directory, whose parts are read as one table (:func:`polars_rap.io.source.scan_file`). Read once, in batches
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
    confidence : float
        Coverage of the report's confidence intervals and error bounds (default 0.95).
    strategy : "planned", "paper", a mapping or a strategy object
        How the budget is spent and the loop's size (:mod:`polars_rap.fit.strategy`): every
        tuning setting lives here. ``"planned"`` (default,
        :class:`~polars_rap.PlannedStrategy`): a budget per query class (the categorical
        marginals twice the others'), a class whose rounds would measure every group anyway
        measured outright (no selection charge), measurements weighed by inverse noise
        variance, controlled decoding. ``"paper"`` (:class:`~polars_rap.PaperStrategy`): the
        paper's Alg. 2 exactly (even split over interleaved rounds, a selection charge in
        each). Settings on either: ``PlannedStrategy(relaxed_rows=2000, rounds={"LT": 20},
        workload=WorkloadSize(n_linear_thresholds=50_000), projection=ProjectionConfig(...))``
        (:class:`~polars_rap.fit.loop_settings.LoopSettings`), or as a mapping,
        ``{"name": "planned", "class_shares": {"CM": 2, "LT": 1}}`` (a config file's
        ``[strategy]`` table).
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
        rows start from a sample of its rows; ``"interactions"``, each
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
        population). Only with ``public``. ``"fit"``, ``"targets"`` and ``"selection"`` were
        removed for what they measured: naming one is a ``ParameterError`` that says why.
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
    constraints : rule, list of rules or dict of name -> rule, optional
        Public rules every output row keeps (:mod:`polars_rap.decode.constraints`), each a
        row-wise boolean Polars expression or the same as SQL text: ``"start_date <=
        end_date"``, ``["AGEP >= 16 OR COW IS NULL"]``, ``{"total": "total = wages + other"}``.
        A ``column = expression`` relation is computed after decoding; a row breaking any other
        rule is redrawn from the model. Declared like the domain, never read from the data,
        checked against the domain before the pass over the rows, no privacy cost; the report
        (``report.parameters["constraints"]``) and the saved model keep them. A config file's
        ``[constraints]`` table (name = "rule").

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
        for ``data`` of an unsupported type and declarations of the wrong type, and for a
        tuning keyword now set on the strategy, such as ``relaxed_rows``: the message says
        where it went).
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
    ...     df, epsilon=1.0, delta=1e-6, domain={"age": (18, 90), "sex": ["F", "M"]}, seed=0,
    ...     strategy=polars_rap.PlannedStrategy(relaxed_rows=20, rounds={"LT": 2},
    ...                                         workload={"n_linear_thresholds": 20}), progress=False)
    >>> res.data.shape, res.data.schema == df.schema
    ((200, 2), True)
    >>> res.report.rho_spent <= res.report.rho_budget
    True
    >>> res.model.sample(1000, seed=0).height  # more rows, no privacy cost
    1000
    """
    run = check_arguments(
        epsilon=epsilon, delta=delta, domain=domain, labels=labels, infer_domain=infer_domain,
        inference_share=inference_share, rows=rows, seed=seed, backend=backend, confidence=confidence,
        strategy=strategy, progress=progress, engine=engine, public=public, public_use=public_use, output=output,
        output_block_rows=output_block_rows, drop=drop, constraints=constraints, moved=moved)
    streams = RandomStreams.from_seed(seed)
    inputs = open_inputs(data, public, run, streams)
    workload = Workload(*workload_and_plan(
        inputs.domain, run.strategy, streams.workload, rounds_cm=run.rounds_cm, rounds_lt=run.rounds_lt,
        rounds_mm=run.rounds_mm, queries_per_round=run.queries_per_round, n_mixed_marginals=run.n_mixed_marginals,
        n_linear_thresholds=run.n_linear_thresholds, max_marginal_cells=run.max_marginal_cells))
    fitted = fit_relaxed(inputs, workload, answer_workload(inputs, workload, run), run, streams)
    decoded = decode_release(inputs, workload, fitted, run, streams)
    report = release_report(inputs, workload, fitted, decoded, run)
    return SynthesisResult(decoded.frame, report, inputs.domain, fitted.relaxed, decoded.files, decoded.label_model,
                           decoded.margins, decoded.ties, inputs.constraints, decoded.ranks)
