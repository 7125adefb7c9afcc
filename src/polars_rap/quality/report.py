"""Quality report: how closely a synthetic table follows the real one, column by column and
pair by pair, with the workload errors, ML utility and (apart) the privacy report.

:func:`quality_report` reads the **real rows**, so a :class:`QualityReport` is *not* a private
release (design.md §5): it is for the curator and the people allowed to see the real data,
and never part of a saved model. Only its ``privacy`` part, taken from a
:class:`~polars_rap.privacy.report.PrivacyReport`, is what the synthesis released.

The real table is read once, in batches (:class:`~polars_rap.io.source.DataSource`), and every
figure comes from counts summed over that pass (:mod:`polars_rap.quality.stats`), so an
input larger than memory works; with test rows, a uniform sample of at most ``ml_rows``
real rows is kept to train the "real" classifier on (and the "synthetic" one trains on as
many synthetic rows at most, so that the two compare at the same training size).

Numeric values are clipped to their declared bounds, as synthesis sees them; NaN is a null.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from polars_rap import kernels
from polars_rap.schema.domain import Domain
from polars_rap.decode.constraints import Constraints, read_constraints
from polars_rap.quality.evaluation import benchmark_workload
from polars_rap.quality.ml_utility import ML_MODELS, ML_ROWS, ml_utility_for_domain
from polars_rap.errors import DataError, ParameterError
from polars_rap.checks import check_int
from polars_rap.quality.relations import category_relations, numeric_pairs
from polars_rap.quality.stats import TableStats, association, ks_distance, ks_points
from polars_rap.quality.shape import DeclarationHint, declaration_hints
from polars_rap.workload.queries import QueryClass
from polars_rap.privacy.report import PrivacyReport
from polars_rap.io.source import DataSource, default_batch_rows
from polars_rap.quality.report_inputs import (check_schemas, domain_mapping, privacy_input, read_test_frame,
                                               resolve_domain, short_name, synthetic_input, without_columns)

__all__ = ["QualityReport", "ColumnDistribution", "quality_report"]

_NOT_PRIVATE = (
    "This evaluation reads the real rows, so it is not differentially private: share it only "
    "with people allowed to see the real data. It is not part of the synthetic release or of "
    "a saved model."
)


@dataclass(frozen=True, slots=True, eq=False)
class ColumnDistribution:
    """One column's distribution in both tables, as the plots draw it.

    ``labels`` are the category names (categorical; ``"null"`` for the null category) or the
    histogram's bin edges ``float64[n_bins + 1]`` in the column's units (numeric; equal steps
    on its declared ``scale``, which its plot's axis follows; a temporal column's in days or
    microseconds, ``temporal``); ``real``/``synthetic`` the fractions of rows per category, or
    of non-null rows per bin.
    """

    name: str
    kind: str
    labels: Any
    real: np.ndarray
    synthetic: np.ndarray
    distance: float
    real_null_rate: float
    synthetic_null_rate: float
    scale: str = "linear"
    temporal: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class QualityReport:
    """Real against synthetic, computed by :func:`quality_report`. Not a private release.

    Attributes
    ----------
    columns : pl.DataFrame
        One row per column: ``column``, ``kind``, ``metric`` (``"total variation"`` over the
        categories, null included, or ``"Kolmogorov-Smirnov"`` over non-null values),
        ``distance`` in [0, 1], ``real_null_rate``, ``synthetic_null_rate``.
    pairs : pl.DataFrame
        One row per pair of columns: ``column_a``, ``column_b``, ``measure`` (``"Cramer's V"``,
        ``"correlation ratio"`` or ``"Pearson"``), ``real``, ``synthetic`` and ``change``
        (absolute difference), worst first.
    numeric_pairs : pl.DataFrame
        One row per pair of numeric columns: Pearson's r and Spearman's rho in each table
        (:func:`~polars_rap.quality.relations.numeric_pairs`), worst Spearman change first; on
        uniform samples of at most ``ml_rows`` rows of each table (all rows of smaller ones).
    category_relations : pl.DataFrame
        One row per numeric × categorical pair: the correlation ratio in each table and the
        worst relative error of a large category's median
        (:func:`~polars_rap.quality.relations.category_relations`), least kept first; on the
        same samples.
    workload : pl.DataFrame or None
        Per query class: ``query_class``, ``queries``, ``mean_error``, ``median_error``,
        ``p90_error``, ``max_error`` (absolute error of an answer, a fraction of rows); when
        the domain has labels.
    workload_errors : pl.DataFrame or None
        Every query's error (``query_class``, ``error``), for the distribution plot.
    ml_utility : pl.DataFrame or None
        One row per label, classifier (``model``: one of
        :data:`~polars_rap.quality.ml_utility.ML_MODELS` asked for, in that order) and
        training table (``trained_on``: ``"synthetic"``/``"real"``): ``macro_f1``,
        ``accuracy``, ``n_train``, ``n_test``, ``note``; when test rows are given.
    privacy : PrivacyReport or None
        What the synthesis released (the only private part), when known.
    distributions : tuple of ColumnDistribution
        Per column, what the plots draw.
    n_real, n_synthetic : int
        Rows read from each table.
    names : dict
        ``real`` and ``synthetic``: short names of the inputs (a file's name, never its path).
    hints : tuple of DeclarationHint
        Domain keys the real values suggest: ``integer`` for a column of whole numbers not
        declared so, ``scale = "log"`` for a strongly right-skewed one
        (:mod:`polars_rap.quality.shape`).
    constraints : pl.DataFrame or None
        With declared constraints, one row per rule: ``name``, ``rule``, ``enforced_by``
        (``"redraw"`` or ``"repair"``), ``real_broken`` and ``synthetic_broken`` (rows that
        break it in each table: false, or a relation's column off its computed value) and
        their shares of each table's rows. Real rows breaking a rule mean the rule, or the
        data, is not what was declared (:mod:`polars_rap.decode.constraints`).
    """

    columns: pl.DataFrame
    pairs: pl.DataFrame
    numeric_pairs: pl.DataFrame
    category_relations: pl.DataFrame
    workload: pl.DataFrame | None
    workload_errors: pl.DataFrame | None
    ml_utility: pl.DataFrame | None
    privacy: PrivacyReport | None
    distributions: tuple[ColumnDistribution, ...]
    n_real: int
    n_synthetic: int
    names: dict
    hints: tuple[DeclarationHint, ...] = ()
    constraints: pl.DataFrame | None = None

    note = _NOT_PRIVATE

    def summary(self) -> pl.DataFrame:
        """The per-column distances and null rates (:attr:`columns`), worst first."""
        return self.columns.sort("distance", descending=True, maintain_order=True)

    def worst_pairs(self, count: int = 10) -> pl.DataFrame:
        """The ``count`` pairs whose association changed most."""
        return self.pairs.head(count)

    def figures(self) -> dict:
        """The report's matplotlib figures by name: ``column: NAME`` per column, ``pairs``
        (the heatmap) and ``workload`` (with labels). Needs matplotlib (``polars-rap[report]``)."""
        from polars_rap.quality.render import report_figures

        return report_figures(self)

    def to_html(self, path: str | os.PathLike[str]) -> Path:
        """Write one self-contained static HTML file (PNG figures embedded, no scripts, no
        network); returns its path. Needs matplotlib (``polars-rap[report]``)."""
        from polars_rap.quality.render import report_html

        path = Path(path)
        path.write_text(report_html(self), encoding="utf-8")
        return path

    def _repr_html_(self) -> str:
        from polars_rap.quality.render import report_html

        return report_html(self, fragment=True)

    def __repr__(self) -> str:
        worst = self.summary().head(1)
        text = (f"QualityReport({len(self.distributions)} columns, {self.n_real} real rows, "
                f"{self.n_synthetic} synthetic rows")
        if worst.height:
            text += f"; worst column {worst['column'][0]!r} ({worst['metric'][0]} {worst['distance'][0]:.3f})"
        return text + "; not private)"


# ---------------------------------------------------------------- entry point
def quality_report(
    real,
    synthetic,
    domain: Mapping[str, Any] | Domain | None = None,
    labels: Sequence[str] | None = None,
    test=None,
    *,
    model=None,
    seed: int = 0,
    sample_rows: int = 1_000_000,
    ml_rows: int = ML_ROWS,
    ml_models: Sequence[str] = ML_MODELS,
    n_mixed_marginals: int = 20_000,
    n_linear_thresholds: int = 200_000,
    backend: str = "auto",
    batch_rows: int | None = None,
    drop: Sequence[str] = (),
    constraints: Any = None,
) -> QualityReport:
    """Compare ``synthetic`` with ``real``: per column, per pair, on the workload, for ML.

    The result reads the real rows and is **not** private (see :class:`QualityReport`).

    Parameters
    ----------
    real : DataFrame, LazyFrame, path to a Parquet/CSV/IPC file, pyarrow Table
        The real rows; read once in batches (a CSV file typed by ``domain``).
    synthetic : DataFrame, LazyFrame, file path, SynthesisResult, SyntheticModel or model directory
        The synthetic rows. A result or model also gives the domain, labels and privacy report;
        a model is sampled (``report.n_rows`` rows, at most ``sample_rows``; ``seed``), at no
        privacy cost.
    domain : mapping or Domain, optional
        The public domain (the ``domain=`` of ``synthesize``); taken from ``synthetic`` when
        it is a result or model.
    labels : sequence of str, optional
        Label columns: they turn on the workload errors, and with ``test`` the ML utility.
        Default: the domain's labels.
    test : DataFrame, LazyFrame or file path, optional
        Held-out real rows: a classifier per label is trained on the synthetic rows and on the
        real rows (uniform samples of at most ``ml_rows`` each), and scored on these.
    model : SyntheticModel, PrivacyReport or model directory, optional
        Where the privacy report comes from when ``synthetic`` is plain rows.
    seed : int, default 0
        Seeds the workload, the real-row sample and a model's sampling (evaluation only).
    sample_rows : int, default 1,000,000
        Rows drawn from a model given as ``synthetic`` (at most its fitted row count).
    ml_rows : int, default 200,000
        Training rows of each reference classifier (see ``test``), and the size of the uniform
        samples of each table that the relations (``numeric_pairs``, ``category_relations``)
        are measured on. On the 10-million-row
        benchmark file the real classifier's F1 is 0.7772 from 200,000 rows and 0.7771 from a
        million, and the whole report takes 55 s at 837 MiB peak RSS against 77 s at 2.5 GiB
        (two cores; ``bench/results/streaming_cpu.json``, logistic regression alone).
    ml_models : sequence of str, default all of ML_MODELS
        The classifiers trained per label (see ``test``): ``"logistic"``,
        ``"gradient_boosting"``, ``"random_forest"``
        (:func:`~polars_rap.quality.ml_utility.ml_utility`). The forest is the slow one: on
        about 200,000 Adult-shaped rows (114 features) it fits in about 19 s on one core,
        twice per label, against 6 s for gradient boosting and a second or two for logistic
        regression; ``ml_models=["logistic"]`` gives the report as it was before the other
        two.
    n_mixed_marginals, n_linear_thresholds : int
        Size of the benchmark workload (:func:`polars_rap.quality.evaluation.workload_errors`).
    backend : str, default "auto"
        Kernel backend of the workload answers (``"auto"``: CUDA when a GPU is usable, as in
        ``synthesize``). They dominate the time with labels: 45 s over 10 million CA-shaped
        rows on two CPU cores (55 s with ``test``), where the rows' (label, numerics) values
        repeat (counted once each); up to three minutes per million rows on one core where
        they do not.
    batch_rows : int, optional
        Rows per batch of the real table (default :func:`~polars_rap.io.source.default_batch_rows`).
    drop : sequence of str
        Columns of ``real`` and ``test`` to leave out, as ``synthesize(drop=...)`` left them
        out of the synthetic rows (a name they lack is ignored). The report still names
        ``real`` by its file.
    constraints : rule, list or dict of rules, optional
        Declared rules (as ``synthesize(constraints=...)`` takes them) to count the real and
        synthetic rows that break; default: those of a result or model given as ``synthetic``.

    Raises
    ------
    DataError
        When the tables' columns or column types differ (naming them), or the data does not
        fit the domain.

    Examples
    --------
    >>> real = pl.DataFrame({"a": ["x", "x", "y", "y"], "u": [1.0, 2.0, 3.0, 4.0]})
    >>> synthetic = pl.DataFrame({"a": ["x", "x", "x", "y"], "u": [1.0, 1.0, 2.0, 2.0]})
    >>> report = quality_report(real, synthetic, domain={"a": ["x", "y"], "u": (0.0, 10.0)})
    >>> report.summary().select("column", "metric", "distance").rows()
    [('u', 'Kolmogorov-Smirnov', 0.5), ('a', 'total variation', 0.25)]
    >>> report.pairs.select("measure", "real", "synthetic").rows()  # doctest: +ELLIPSIS
    [('correlation ratio', 0.894..., 0.577...)]
    """
    check_int("sample_rows", sample_rows, 1)
    check_int("ml_rows", ml_rows, 1)
    ml_models = _check_ml_models(ml_models)
    given = synthetic_input(synthetic, domain_mapping(domain), seed, sample_rows)
    synthetic_frame, privacy, known_domain = given.frame, given.privacy, given.domain
    if model is not None:
        privacy = privacy_input(model)
    mapping = domain_mapping(domain if domain is not None else known_domain)
    real_name = short_name(real)
    drop = [drop] if isinstance(drop, str) else list(drop)
    if drop:
        real = without_columns(real, mapping, drop)
        test = None if test is None else without_columns(test, mapping, drop)
    source = DataSource.from_input(real, mapping)
    check_schemas(source.schema, synthetic_frame.schema)
    domain = resolve_domain(domain if domain is not None else known_domain, source.schema, labels)
    synthetic_frame = synthetic_frame.select(domain.names)
    rules = given.constraints if constraints is None else read_constraints(constraints, domain)
    real_broken = np.zeros(0 if rules is None else len(rules.rules), dtype=np.int64)
    if test is not None and not domain.labels:
        msg = ("test rows are for the ML utility, which needs a label column: pass labels=[...] "
               "(or use a domain with labels), or leave test out")
        raise ParameterError(msg)

    rng = np.random.default_rng(seed)
    queries = None
    if domain.labels:
        queries = benchmark_workload(domain, seed, ("CM", "MM", "LT"), n_mixed_marginals, n_linear_thresholds)
    backend_module = kernels.resolve_backend(backend) if queries is not None else None
    points = ks_points(synthetic_frame, domain)
    real_stats = TableStats(domain, points, queries, backend_module, ml_rows, rng)  # the sample: relations, ML
    for batch in source.batches(domain.names, batch_rows or default_batch_rows(domain)):
        real_stats.add(batch)
        if rules is not None:
            real_broken += rules.broken(batch, domain)
    if real_stats.n_rows == 0:
        msg = "the real table has no rows; a quality report needs at least one"
        raise DataError(msg)
    synthetic_stats = TableStats(domain, points, queries, backend_module, 0, rng)
    for batch in synthetic_frame.iter_slices(batch_rows or default_batch_rows(domain)):
        synthetic_stats.add(batch)
    if synthetic_stats.n_rows == 0:
        msg = "the synthetic table has no rows; a quality report needs at least one"
        raise DataError(msg)

    distributions = tuple(_column_distribution(spec, real_stats, synthetic_stats) for spec in domain.columns)
    workload, workload_errors = _workload_frames(queries, real_stats, synthetic_stats)
    real_sample = real_stats.sample_frame(real)
    synthetic_sample = synthetic_frame.sample(ml_rows, seed=seed) if synthetic_frame.height > ml_rows else synthetic_frame
    ml = None
    if test is not None:
        ml = _ml_frame(real_sample, synthetic_sample, read_test_frame(test, mapping, domain), domain, seed, ml_models)
    return QualityReport(
        columns=_columns_frame(distributions),
        pairs=_pairs_frame(domain, real_stats, synthetic_stats),
        numeric_pairs=_numeric_pairs_frame(real_sample, synthetic_sample, domain),
        category_relations=_category_frame(real_sample, synthetic_sample, domain),
        workload=workload, workload_errors=workload_errors, ml_utility=ml, privacy=privacy,
        distributions=distributions, n_real=real_stats.n_rows, n_synthetic=synthetic_stats.n_rows,
        names={"real": real_name, "synthetic": short_name(synthetic)},
        hints=declaration_hints(domain, real_stats.shapes),
        constraints=None if rules is None else _constraints_frame(rules, domain, real_broken, real_stats.n_rows,
                                                                  synthetic_frame),
    )


# ---------------------------------------------------------------- results
def _constraints_frame(rules: Constraints, domain: Domain, real_broken: np.ndarray, n_real: int,
                       synthetic: pl.DataFrame) -> pl.DataFrame:
    synthetic_broken = rules.broken(synthetic, domain)
    return pl.DataFrame(rules.describe()).with_columns(
        real_broken=pl.Series(real_broken.tolist(), dtype=pl.Int64),
        real_broken_share=pl.Series(real_broken / n_real),
        synthetic_broken=pl.Series(synthetic_broken, dtype=pl.Int64),
        synthetic_broken_share=pl.Series(np.asarray(synthetic_broken) / synthetic.height))


def _column_distribution(spec, real: TableStats, synthetic: TableStats) -> ColumnDistribution:
    if spec.is_categorical:
        p_real = real.category_counts[spec.name] / real.n_rows
        p_synthetic = synthetic.category_counts[spec.name] / synthetic.n_rows
        labels = [str(c) for c in spec.categories] + (["null"] if spec.nullable else [])
        distance = 0.5 * float(np.abs(p_real - p_synthetic).sum())
        return ColumnDistribution(spec.name, "categorical", labels, p_real, p_synthetic, distance,
                                  real.null_rate(spec), synthetic.null_rate(spec))
    edges = real.edges[spec.name]
    histograms = [stats.histograms[spec.name] / max(stats.histograms[spec.name].sum(), 1) for stats in (real, synthetic)]
    return ColumnDistribution(spec.name, "numeric", edges, histograms[0], histograms[1],
                              ks_distance(spec.name, real, synthetic), real.null_rate(spec), synthetic.null_rate(spec),
                              spec.scale, spec.is_temporal)


def _columns_frame(distributions) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "column": [d.name for d in distributions],
            "kind": [d.kind for d in distributions],
            "metric": ["total variation" if d.kind == "categorical" else "Kolmogorov-Smirnov" for d in distributions],
            "distance": [d.distance for d in distributions],
            "real_null_rate": [d.real_null_rate for d in distributions],
            "synthetic_null_rate": [d.synthetic_null_rate for d in distributions],
        },
        schema={"column": pl.String, "kind": pl.String, "metric": pl.String, "distance": pl.Float64,
                "real_null_rate": pl.Float64, "synthetic_null_rate": pl.Float64},
    )


def _pairs_frame(domain: Domain, real: TableStats, synthetic: TableStats) -> pl.DataFrame:
    rows = []
    for (name_a, name_b), real_sums in real.pair_totals.items():
        spec_a, spec_b = domain[name_a], domain[name_b]
        measure, real_value = association(spec_a, spec_b, real_sums)
        _, synthetic_value = association(spec_a, spec_b, synthetic.pair_totals[(name_a, name_b)])
        rows.append((name_a, name_b, measure, real_value, synthetic_value, abs(real_value - synthetic_value)))
    schema = {"column_a": pl.String, "column_b": pl.String, "measure": pl.String, "real": pl.Float64,
              "synthetic": pl.Float64, "change": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row").sort("change", descending=True, maintain_order=True)


def _numeric_pairs_frame(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> pl.DataFrame:
    pairs = numeric_pairs(real, synthetic, domain)
    worst = (pl.col("spearman_synthetic") - pl.col("spearman_real")).abs()
    return pairs.sort(worst, descending=True, maintain_order=True)


def _category_frame(real: pl.DataFrame, synthetic: pl.DataFrame, domain: Domain) -> pl.DataFrame:
    relations = category_relations(real, synthetic, domain)
    return relations.sort(pl.col("ratio_real") - pl.col("ratio_synthetic"), descending=True, maintain_order=True)


def _workload_frames(queries, real: TableStats, synthetic: TableStats):
    if queries is None:
        return None, None
    errors = np.abs(real.answer_counts / real.n_rows - synthetic.answer_counts / synthetic.n_rows)
    long = pl.DataFrame({"query_class": [QueryClass.SHORT[c] for c in queries.query_class], "error": errors},
                        schema={"query_class": pl.String, "error": pl.Float64})
    by_class = long.group_by("query_class", maintain_order=True).agg(
        pl.len().alias("queries"), pl.col("error").mean().alias("mean_error"),
        pl.col("error").median().alias("median_error"), pl.col("error").quantile(0.9).alias("p90_error"),
        pl.col("error").max().alias("max_error"))
    return by_class, long


def _check_ml_models(ml_models: Sequence[str]) -> tuple[str, ...]:
    """``ml_models`` as a tuple in :data:`ML_MODELS` order, checked before any work starts."""
    models = (ml_models,) if isinstance(ml_models, str) else tuple(ml_models)
    unknown = [m for m in models if m not in ML_MODELS]
    if not models or unknown:
        msg = (f"The 'ml_models' parameter must be a non-empty list of {', '.join(map(repr, ML_MODELS))}. "
               f"Got {list(models)!r}")
        raise ParameterError(msg)
    return tuple(m for m in ML_MODELS if m in models)


def _ml_frame(real: pl.DataFrame, synthetic: pl.DataFrame, test: pl.DataFrame, domain: Domain, seed: int,
              models: Sequence[str] = ML_MODELS):
    rows = []
    for label in domain.labels:
        for model in models:
            for trained_on, train in (("synthetic", synthetic), ("real", real)):
                scores = ml_utility_for_domain(train, test, label, domain, seed=seed, model=model)
                rows.append({"label": label, "model": model, "trained_on": trained_on,
                             **{k: scores.get(k) for k in ("macro_f1", "accuracy", "n_train", "n_test")},
                             "note": scores.get("note", "")})
    return pl.DataFrame(rows, schema={"label": pl.String, "model": pl.String, "trained_on": pl.String,
                                      "macro_f1": pl.Float64, "accuracy": pl.Float64, "n_train": pl.Int64,
                                      "n_test": pl.Int64, "note": pl.String})
