"""What a synthesis releases: the privacy ledger, the measured queries, their noisy answers.

Everything here is a charged release or post-processing of one (design.md §5): the noisy
answers and their noise scales, confidence intervals built from them, and the synthetic data's
answers on the same queries. True answers, clip counts and utility scores that read the real
data never enter a report; they belong to :mod:`polars_rap.evaluation`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from statistics import NormalDist

import polars as pl

from polars_rap.privacy import PrivacyEvent

__all__ = ["PrivacyReport", "interval_halfwidth"]


def interval_halfwidth(noise_std, confidence: float):
    """Half-width ``z * std`` of the two-sided interval at ``confidence`` (per query)."""
    if not 0.0 < confidence < 1.0:
        msg = f"The 'confidence' parameter must be in (0, 1). Got {confidence!r}"
        raise ValueError(msg)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return z * noise_std


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
        ``description``, ``noisy_answer``, ``noise_std``, ``ci_low``, ``ci_high`` (per-query
        interval at ``confidence``), ``synthetic_answer`` (on the returned data).
    confidence : float
        Coverage of the per-query intervals.
    parameters : dict
        The public settings the run used.
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

    def to_dict(self) -> dict:
        """A JSON-ready dict of the whole report."""
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "rho_budget": self.rho_budget,
            "rho_spent": self.rho_spent,
            "n_rows": self.n_rows,
            "confidence": self.confidence,
            "parameters": self.parameters,
            "events": [
                {"mechanism": e.mechanism, "rho": e.rho, "description": e.description, "round": e.round}
                for e in self.events
            ],
            "measurements": self.measurements.to_dicts(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, default=str)

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
        for row in by_class.iter_rows(named=True):
            lines.append(f"  {row['query_class']}: {row['groups']} groups, {row['queries']} queries measured")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.summary()
