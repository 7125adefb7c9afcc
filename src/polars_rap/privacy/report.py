"""What a synthesis releases: the privacy ledger, the measured queries, their noisy answers.

Everything here is a charged release or post-processing of one (design.md §5): the noisy
answers and their noise scales, confidence intervals built from them, and the synthetic data's
answers on the same queries. True answers, clip counts and utility scores that read the real
data never enter a report; they belong to :mod:`polars_rap.quality.evaluation`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
import polars as pl

from polars_rap.checks import check_range
from polars_rap.errors import DataError, ParameterTypeError
from polars_rap.privacy.ledger import PrivacyEvent
from polars_rap.workload.queries import group_l1

__all__ = [
    "PrivacyReport", "SelectionRecord", "interval_halfwidth", "simultaneous_halfwidth",
    "subgaussian_halfwidth", "unmeasured_error_bounds",
]  # fmt: skip


def _check_confidence(confidence: float) -> float:
    check_range("confidence", confidence, 0.0, 1.0)
    return float(confidence)


def interval_halfwidth(noise_std, confidence: float, lattice_step: float = 0.0):
    """Half-width ``z * std + lattice_step`` of the two-sided interval at ``confidence``.

    ``lattice_step`` is one count in the answers' units (1/n) when the noise is discrete
    Gaussian on counts: its magnitude is stochastically below a continuous Gaussian's of the
    same sigma plus one count, P[|X| >= a + 1] <= P[|N(0, sigma^2)| >= a] for a >= 0
    (:mod:`polars_rap.privacy.samplers`), so the widened interval covers at least ``confidence``.
    0.0: continuous Gaussian noise.
    """
    z = NormalDist().inv_cdf(0.5 + _check_confidence(confidence) / 2.0)
    return z * noise_std + lattice_step


def simultaneous_halfwidth(noise_std, confidence: float, n_answers: int, lattice_step: float = 0.0):
    """Half-width of intervals that hold *all together* at ``confidence`` (Bonferroni).

    With ``z`` at ``1 - alpha / (2 M)`` for M = ``n_answers``, each answer's interval
    ``a ± (z std + lattice_step)`` misses with probability at most alpha / M (see
    :func:`interval_halfwidth`), its noise being fresh after the adaptive selections before
    it; so at most M answers all cover their true values with probability at least
    ``confidence`` = 1 - alpha. M must be fixed before any selection (an upper bound on the
    answers measured, e.g. :func:`polars_rap.pipeline.release.bonferroni_answers`), never the count
    the noisy selections produced.
    """
    alpha = 1.0 - _check_confidence(confidence)
    z = NormalDist().inv_cdf(1.0 - alpha / (2.0 * max(int(n_answers), 1)))
    return z * noise_std + lattice_step


def subgaussian_halfwidth(noise_std, confidence: float, n_answers: int = 1):
    """Half-width ``std * sqrt(2 ln(2 M / alpha))`` of an interval at ``confidence`` = 1 -
    alpha (M = ``n_answers`` for Bonferroni, 1 for one answer) when the noise is a *sum* of
    independent discrete Gaussians whose sigmas square-sum to ``noise_std**2`` (a histogram's
    prefix, :mod:`polars_rap.fit.numeric_histograms`).

    Each N_Z(0, sigma^2) has E[exp(tX)] <= exp(t^2 sigma^2 / 2) (Canonne, Kamath & Steinke
    2020), so the sum S has E[exp(tS)] <= exp(t^2 std^2 / 2) and Chernoff's bound gives
    P[|S| >= a] <= 2 exp(-a^2 / (2 std^2)); at ``a`` = this half-width that is alpha / M. The
    one-count widening of :func:`interval_halfwidth` rests on a single draw's tail and does
    not add up over a sum, so this bound (wider than ``z * std`` by up to 40% at 95%) is used.
    """
    alpha = 1.0 - _check_confidence(confidence)
    return noise_std * math.sqrt(2.0 * math.log(2.0 * max(int(n_answers), 1) / alpha))


@dataclass(frozen=True, slots=True, eq=False)
class SelectionRecord:
    """What one Gumbel top-K round released and used, kept to bound unmeasured queries.

    ``candidates`` (int64[C]) are the groups that competed; ``candidate_answers`` (float64,
    the candidates' queries concatenated in group order) are the current synthetic data's
    expected answers the scores were computed against; ``gumbel_scale`` is b; ``selected``
    (int64[K]) the groups picked, with the L1 distance from their noisy answers to those
    synthetic answers (``selected_gap``), their per-answer noise std and their sizes;
    ``lattice_step`` is one count in answer units (1/n) for discrete Gaussian measurements
    (0.0 for continuous ones); ``candidate_shift`` (float64[C], answer units, None for none)
    what was subtracted from each candidate's L1 error to make its score (a noise-aware
    round's public expected noise norm). All of it is released values, public values or
    post-processing of them.
    """

    round: int
    query_class: str
    candidates: np.ndarray
    candidate_answers: np.ndarray
    gumbel_scale: float
    selected: np.ndarray
    selected_gap: np.ndarray
    selected_std: np.ndarray
    selected_size: np.ndarray
    lattice_step: float = 0.0
    candidate_shift: np.ndarray | None = None

    @property
    def unmeasured(self) -> np.ndarray:
        """bool[C]: which candidates were not selected (those the bounds are for)."""
        return ~np.isin(self.candidates, self.selected)


def unmeasured_error_bounds(record: SelectionRecord, group_sizes: np.ndarray,
                            final_answers: np.ndarray, confidence: float) -> np.ndarray:
    """float64[C - K]: an upper bound on the L1 error of each candidate group not selected.

    Re-derives AIM's bound (McKenna et al. 2022, Thm. 4 / Cor. 2) for one-shot Gumbel
    top-K. Let s_r be the true L1 error of group r against the synthetic data D_t used for
    the scores, G_r ~ Gumbel(b) its noise, S the selected set. For r not selected and every
    j in S, ``s_r + G_r <= s_j + G_j``, so ``s_r <= s_j + max_C G - G_r``. With probability
    at least ``confidence`` = 1 - alpha, splitting alpha in three:

    * ``max_C G <= b (log C + lambda2)``, lambda2 = log(3 / alpha) (Gumbel max tail);
    * ``-G_r <= b log log(3 / alpha)`` (Gumbel lower tail, for this r);
    * for every j in S, ``s_j <= gap_j + std_j (n_j sqrt(2/pi) + lambda1 sqrt(n_j)) + n_j
      lattice_step`` where gap_j = ||y_j - q_j(D_t)||_1 for the noisy answers y_j: the L1
      norm of n_j Gaussian errors is sqrt(n_j)-Lipschitz, so it exceeds its mean ``std
      sqrt(2/pi) n_j`` by ``lambda1 std sqrt(n_j)`` with probability at most
      exp(-lambda1^2 / 2); lambda1 = sqrt(2 log(3K / alpha)) covers all K at once. Discrete
      Gaussian errors are, in magnitude, stochastically below Gaussian ones plus one count
      each (:func:`interval_halfwidth`), hence the ``n_j lattice_step`` term.

    The selection's law is that of one-shot Gumbel top-K of scale b whether it is sampled by
    Gumbel noise or, as here, by exact peeling exponential mechanisms: the bound is a
    statement about that law, the Gumbel variables only a device of its proof.

    When the scores were the errors minus a public shift h_r (a noise-aware round), the
    same steps give ``s_r <= h_r + min_j (s_j - h_j) + max_C G - G_r``: the bound gains the
    unselected group's shift and each selected group's is taken off.

    Taking the smallest j and the triangle inequality to the returned data D,
    ``||q_r(D) - q_r(data)||_1 <= ||q_r(D) - q_r(D_t)||_1 + bound``. Each bound holds with
    probability ``confidence`` for its own group (not all groups at once), and is capped at
    the largest error possible (2 for a group of fractions summing to at most 1, 1 for a
    single query), which it exceeds when the measurements are too noisy to say more.

    Parameters
    ----------
    record : SelectionRecord
        The last selection round in which the groups competed.
    group_sizes : int64[n_groups]
        Queries per group of the whole workload.
    final_answers : float64
        Answers of the returned synthetic data on the candidates' queries, concatenated in
        ``record.candidates`` order.
    confidence : float
    """
    alpha = 1.0 - _check_confidence(confidence)
    n_selected = len(record.selected)
    lambda1 = math.sqrt(2.0 * math.log(3.0 * n_selected / alpha))
    lambda2 = math.log(3.0 / alpha)
    lower_tail = math.log(math.log(3.0 / alpha))
    size = record.selected_size.astype(np.float64)
    selected_error = record.selected_gap + record.selected_std * (
        size * math.sqrt(2.0 / math.pi) + lambda1 * np.sqrt(size)
    ) + size * record.lattice_step
    gumbel_terms = record.gumbel_scale * (math.log(len(record.candidates)) + lambda2 + lower_tail)
    sizes = group_sizes[record.candidates]
    drift = group_l1(final_answers - record.candidate_answers, sizes)
    unmeasured = record.unmeasured
    if record.candidate_shift is None:
        bound = drift[unmeasured] + float(selected_error.min()) + gumbel_terms
    else:
        shift = np.asarray(record.candidate_shift, dtype=np.float64)
        position = {int(group): i for i, group in enumerate(record.candidates)}
        selected_shift = shift[[position[int(group)] for group in record.selected]]
        bound = drift[unmeasured] + shift[unmeasured] + float((selected_error - selected_shift).min()) + gumbel_terms
    # No bound needs to exceed the largest possible error: the L1 distance of two vectors of
    # fractions each summing to at most 1 is at most 2 (1 for a single query).
    trivial = np.where(sizes[unmeasured] > 1, 2.0, 1.0)
    return np.minimum(bound, trivial)


@dataclass(frozen=True, slots=True, eq=False)
class PrivacyReport:
    """The released record of one synthesis.

    Attributes
    ----------
    epsilon, delta : float
        The (ε, δ)-DP guarantee of the whole release (replace-one neighbours, n public).
    rho_budget, rho_spent : float
        zCDP budget from (ε, δ) by the tight conversion, and what the mechanisms charged.
    n_rows : int
        Number of input rows (public under replace-one neighbouring).
    events : tuple[PrivacyEvent, ...]
        Every charge of the ledger, in order.
    measurements : pl.DataFrame
        One row per measured query: ``round``, ``query_class``, ``group``, ``query``,
        ``description``, ``noisy_answer``, ``noise_std``, ``ci_low``/``ci_high`` (interval at
        ``confidence`` for that query), ``ci_low_simultaneous``/``ci_high_simultaneous``
        (Bonferroni over ``parameters["bonferroni_answers"]``, the most answers the plan can
        measure: all intervals hold together at ``confidence``), ``synthetic_answer`` (on
        the returned data) and ``error_bound``: ``|synthetic - noisy| + z std + 1/n``, an
        upper bound on the returned data's error on that query at ``confidence`` (the
        intervals' half-width is ``z std + 1/n``: one count more, for the discrete noise).
    confidence : float
        Coverage of the intervals and bounds.
    parameters : dict
        The public settings the run used, and ``bonferroni_answers``: the count, fixed by
        the plan, that the simultaneous intervals are corrected for.
    conversion_delta, approximate_delta : float
        How ``delta`` was shared: the zCDP-to-(ε, δ) conversion's part, and the total-variation
        slack of approximate steps (private category inference), composed as
        ``conversion_delta + (1 + e^epsilon) * approximate_delta <= delta``.
    unmeasured : pl.DataFrame
        One row per workload group never measured: ``query_class``, ``group``,
        ``description`` (its first query), ``round`` (the last selection it competed in) and
        ``error_bound``, an upper bound on the returned data's L1 error over the group's
        queries at ``confidence`` (see :func:`unmeasured_error_bounds`).
    unmeasured_note : str
        Which groups have no bound, and why.
    public_data : dict or None
        The public table the synthesis used as a prior (``synthesize(public=...)``), or None:
        ``rows``, ``sha256`` (of its content as encoded for the domain), ``columns`` it held,
        ``filled_columns`` it lacked, ``uses``, ``rho_charged`` (what its uses charged the
        ledger, the fsum of their events: the checks and margins of ``"reweight"`` and
        ``"margins"`` measure the sensitive rows; 0.0 for the other uses, since reading the
        public table is free); with ``"reweight"``, ``reweight_released`` (``"synthetic
        rows"`` or ``"reweighted public rows"``: the check's release), ``reweight_margins``
        (the released public rows' raking targets, ``"one-way"`` or ``"x-label"`` (the loop's
        rows' margins) or ``"measured"`` (``"margins"``' own); None when the synthetic rows
        were released),
        ``reweight_check_rho`` (what the check charged), ``reweight_check_tables`` (the marginal
        tables it scored) and ``reweight_effective_rows`` (per
        raking, ``1 / sum(w**2)`` of its weights); with ``"margins"``, ``margins_rho`` (what
        measuring the one-way margins charged) and ``margins_noise_std`` (per column, its
        margin's noise std per cell). Never a row or a value of it.
    """

    epsilon: float
    delta: float
    rho_budget: float
    rho_spent: float
    n_rows: int
    events: tuple[PrivacyEvent, ...]
    measurements: pl.DataFrame
    confidence: float
    parameters: dict
    conversion_delta: float
    approximate_delta: float
    unmeasured: pl.DataFrame
    unmeasured_note: str
    public_data: dict | None = None

    def to_dict(self) -> dict:
        """A JSON-ready dict of the whole report, one key per field, in field order.

        Events become dicts of their fields; a DataFrame field becomes
        ``{"columns": {name: dtype}, "rows": [{name: value, ...}, ...]}`` so that its dtypes
        survive even with no rows. :meth:`from_dict` is the inverse.
        """
        return {f.name: _value_to_json(getattr(self, f.name)) for f in dataclasses.fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "PrivacyReport":
        """Rebuild a report from :meth:`to_dict` (or ``json.loads`` of :meth:`to_json`).

        ``from_dict(report.to_dict())`` equals ``report`` field by field, floats to the bit
        and DataFrames with their dtypes. Raises ``DataError`` naming a missing or unknown key.
        """
        if not isinstance(data, Mapping):
            msg = f"a report dict must be a mapping of field names to values. Got {type(data).__name__}"
            raise ParameterTypeError(msg)
        fields = dataclasses.fields(cls)
        unknown = sorted(set(data) - {f.name for f in fields})
        if unknown:
            msg = (
                f"report dict has unknown keys {unknown}; this polars-rap's PrivacyReport has "
                f"{[f.name for f in fields]}. Was it written by a newer polars-rap? Upgrade it"
            )
            raise DataError(msg)
        hints = typing.get_type_hints(cls)
        values = {}
        for f in fields:
            if f.name in data:
                values[f.name] = _value_from_json(hints[f.name], data[f.name], f.name)
            elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                msg = f"report dict lacks the key {f.name!r}, which a PrivacyReport requires"
                raise DataError(msg)
        return cls(**values)

    def to_json(self, indent: int | None = 2, full: bool = True) -> str:
        """The report as JSON: :meth:`to_dict` (``full=True``) or :meth:`summary_dict`."""
        data = self.to_dict() if full else self.summary_dict()
        return json.dumps(data, indent=indent, default=_json_default)

    def summary_dict(self) -> dict:
        """A JSON-ready summary whose size does not grow with the workload: every field but
        the three tables, then per mechanism the charges (count, rho, delta), per query class
        what was measured (groups, queries, median noise std) and what was not (groups,
        median and largest error bound), and the :meth:`summary` text as lines."""
        tables = {"events", "measurements", "unmeasured"}
        scalars = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in tables}
        events = pl.DataFrame({"mechanism": [e.mechanism for e in self.events], "rho": [e.rho for e in self.events],
                               "delta": [e.delta for e in self.events]},
                              schema={"mechanism": pl.String, "rho": pl.Float64, "delta": pl.Float64})
        charges = events.group_by("mechanism", maintain_order=True).agg(
            pl.len().alias("count"), pl.col("rho").sum(), pl.col("delta").sum())
        measured = self.measurements.group_by("query_class", maintain_order=True).agg(
            pl.col("group").n_unique().alias("groups"), pl.len().alias("queries"),
            pl.col("noise_std").median().alias("median_noise_std"))
        unmeasured = self.unmeasured.group_by("query_class", maintain_order=True).agg(
            pl.len().alias("groups"), pl.col("error_bound").median().alias("median_error_bound"),
            pl.col("error_bound").max().alias("max_error_bound"))
        return {**scalars, "charges": charges.to_dicts(), "measured_by_class": measured.to_dicts(),
                "unmeasured_by_class": unmeasured.to_dicts(), "summary": self.summary().splitlines()}

    def summary(self) -> str:
        """A few printable lines: the guarantee, the budget, what was measured."""
        by_class = (
            self.measurements.group_by("query_class")
            .agg(pl.len().alias("queries"), pl.col("group").n_unique().alias("groups"))
            .sort("query_class")
        )
        lines = [
            f"({self.epsilon:g}, {self.delta:g})-DP over {self.n_rows} rows "
            f"(replace-one neighbours; n is public)",
            f"zCDP budget rho = {self.rho_budget:.6g}, spent {self.rho_spent:.6g} "
            f"in {len(self.events)} charges",
        ]
        if self.approximate_delta > 0.0:
            lines.append(
                f"delta = {self.conversion_delta:.3g} (zCDP conversion) + (1 + e^eps) x "
                f"{self.approximate_delta:.3g} (thresholded category inference)"
            )
        for row in by_class.iter_rows(named=True):
            lines.append(f"  {row['query_class']}: {row['groups']} groups, {row['queries']} queries measured")
        if self.unmeasured.height:
            worst = self.unmeasured.group_by("query_class").agg(
                pl.len().alias("groups"), pl.col("error_bound").median().alias("median")
            ).sort("query_class")
            for row in worst.iter_rows(named=True):
                lines.append(
                    f"  {row['query_class']}: {row['groups']} groups unmeasured, median L1 error "
                    f"bound {row['median']:.3g} at {self.confidence:.0%}"
                )
        if self.unmeasured_note:
            lines.append(f"  {self.unmeasured_note}")
        if self.public_data:
            lines.append(public_data_line(self.public_data))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()

    def __repr__(self) -> str:
        """One line: the guarantee, the budget, what was measured (the fields hold the rest)."""
        return (
            f"PrivacyReport(({self.epsilon:g}, {self.delta:g})-DP over {self.n_rows} rows, "
            f"rho {self.rho_spent:.6g} of {self.rho_budget:.6g} spent in {len(self.events)} charges, "
            f"{self.measurements.height} queries measured, {self.unmeasured.height} groups unmeasured)"
        )

    def _repr_html_(self) -> str:
        """A notebook's view: the guarantee as a small table and :meth:`summary`."""
        return _summary_html(self)


def public_data_line(record: Mapping[str, Any]) -> str:
    """One line on the public table a synthesis used (its record in ``report.public_data``).

    >>> public_data_line({"rows": 1200, "sha256": "ab12" * 16, "columns": ["a", "b"],
    ...                   "filled_columns": ["c"], "uses": ["init"], "rho_charged": 0.0})[-54:]
    'filled: c; used for init; reading it charged no budget'
    """
    filled = record.get("filled_columns") or []
    return (f"public prior: {record['rows']:,} rows (sha256 {str(record['sha256'])[:12]}...), "
            f"{len(record.get('columns', []))} columns" + (f", filled: {', '.join(filled)}" if filled else "")
            + f"; used for {', '.join(record.get('uses', []))}"
            + (f"; {record.get('label_share', 1.0):.0%} of labels drawn from its model, ridge {record['label_ridge']:.3g}"
               if "label_ridge" in record else "")
            + (f"; released the {record['reweight_released']}"
               + (f", raked to {record['reweight_margins']} margins" if record.get("reweight_margins") else "")
               + f" (a check charged rho {record['reweight_check_rho']:.3g})" if "reweight_released" in record else "")
            + ((f"; its margins measured for it charged rho {record['margins_rho']:.3g}"
                if record["margins_rho"] > 0 else "; its margins were not measured (the loop's budget knows them)")
               if "margins_rho" in record else "")
            + (f"; its uses charged rho {record['rho_charged']:.3g} of the budget"
               if record.get("rho_charged", 0.0) > 0 else "")
            + "; reading it charged no budget")


def _summary_html(report: PrivacyReport, title: str = "Privacy report") -> str:
    """A short HTML block: epsilon, delta, rho and rows as a table, then the summary text."""
    import html

    facts = [("epsilon", f"{report.epsilon:g}"), ("delta", f"{report.delta:g}"),
             ("rho budget", f"{report.rho_budget:.6g}"), ("rho spent", f"{report.rho_spent:.6g}"),
             ("rows (public)", f"{report.n_rows:,}"), ("queries measured", f"{report.measurements.height:,}")]
    header = "".join(f"<th>{name}</th>" for name, _ in facts)
    cells = "".join(f"<td>{value}</td>" for _, value in facts)
    return (f"<div><strong>{html.escape(title)}</strong><table><tr>{header}</tr><tr>{cells}</tr></table>"
            f"<pre>{html.escape(report.summary())}</pre></div>")


# ---------------------------------------------------------------- (de)serialisation helpers
def _value_to_json(value: Any) -> Any:
    if isinstance(value, pl.DataFrame):
        return {"columns": {name: str(dtype) for name, dtype in value.schema.items()},
                "rows": value.to_dicts()}
    if isinstance(value, tuple) and all(dataclasses.is_dataclass(v) for v in value):
        return [dataclasses.asdict(v) for v in value]
    return value


def _value_from_json(hint: Any, value: Any, name: str) -> Any:
    """Inverse of :func:`_value_to_json` for a field annotated ``hint``."""
    if hint is pl.DataFrame:
        return _frame_from_json(value, name)
    if typing.get_origin(hint) is tuple:  # JSON has lists only
        item_type = typing.get_args(hint)[0] if typing.get_args(hint) else None
        if dataclasses.is_dataclass(item_type):
            return tuple(item_type(**item) for item in value)
        return tuple(value)
    return value


def _frame_from_json(value: Any, name: str) -> pl.DataFrame:
    if isinstance(value, list):  # rows without a schema: dtypes inferred
        return pl.DataFrame(value)
    if not (isinstance(value, Mapping) and set(value) == {"columns", "rows"}):
        msg = f"report field {name!r} must be a dict with 'columns' and 'rows'. Got {type(value).__name__}"
        raise DataError(msg)
    schema = {column: _dtype_from_name(text, name) for column, text in value["columns"].items()}
    return pl.DataFrame(value["rows"], schema=schema)


def _dtype_from_name(text: str, field_name: str) -> pl.DataType:
    """The Polars dtype ``str(dtype)`` printed: a plain name (``"Int64"``) or ``List(...)``."""
    if isinstance(text, str) and text.startswith("List(") and text.endswith(")"):
        return pl.List(_dtype_from_name(text[5:-1], field_name))
    dtype = getattr(pl, text, None) if isinstance(text, str) and text.isidentifier() else None
    if not (isinstance(dtype, type) and issubclass(dtype, pl.DataType)):
        msg = f"report field {field_name!r} names an unknown column dtype {text!r}"
        raise DataError(msg)
    return dtype()


def _json_default(value: Any) -> Any:
    """NumPy scalars as Python numbers; anything else JSON cannot hold as its text."""
    return value.item() if isinstance(value, np.generic) else str(value)
