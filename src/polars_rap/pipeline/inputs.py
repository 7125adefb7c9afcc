"""The pipeline's inputs stage: the sensitive table opened (not yet read), the domains asked for
inferred privately (the first charge), the public domain built and the public table read.

Only the inference reads sensitive values here, through its own charged mechanism
(:mod:`polars_rap.privacy.inference`); everything else is the schema and public values. Every
check that needs only the schemas runs before any row of either table is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from polars_rap.decode.constraints import Constraints, read_constraints
from polars_rap.errors import DataError
from polars_rap.io.engines import open_source
from polars_rap.io.source import without_columns
from polars_rap.pipeline.arguments import RunSettings, check_memory
from polars_rap.pipeline.streams import RandomStreams
from polars_rap.privacy.accounting import BudgetSplit, split_budget
from polars_rap.privacy.inference import InferenceRequest, infer_declarations, inference_requests, needs_approximate_delta
from polars_rap.privacy.ledger import PrivacyLedger
from polars_rap.public.labels import check_label_use
from polars_rap.public.prior import PublicTable, default_public_uses, open_public, read_public
from polars_rap.public.reweight import check_columns
from polars_rap.schema.domain import Domain, check_declared

__all__ = ["Inputs", "open_inputs"]

APPROXIMATE_DELTA_SHARE = 0.5
"""Part of delta given to thresholded category inference when a run uses it."""


@dataclass(frozen=True, slots=True)
class Inputs:
    """The sensitive table as a source (``source``: a ``DataSource`` or ``RaySource``, not yet
    read but by inference), its public ``domain``, the columns whose domain was inferred
    (``requests``), the public table (None without one) and its checked ``public_uses``, and
    the run's ``budget`` and ``ledger`` (charged with the inference already), and the declared
    ``constraints`` checked against the domain (None without)."""

    source: Any
    domain: Domain
    requests: list[InferenceRequest]
    public_table: PublicTable | None
    public_uses: tuple[str, ...]
    budget: BudgetSplit
    ledger: PrivacyLedger
    constraints: Constraints | None = None


def open_inputs(data: Any, public: Any, run: RunSettings, streams: RandomStreams) -> Inputs:
    """Open ``data`` (and ``public``), infer the domains ``run`` asks for (charged, from
    ``streams.inference``) and build the public domain; raise before reading a row for any
    mistake the schemas show."""
    source = open_source(data, run.domain, run.engine)  # a CSV's dtypes come from the domain, never its rows
    public_source = None if public is None else open_public(public, run.domain, list(source.schema), run.drop)
    source = without_columns(source, run.drop, present_only=public is not None)  # open_public checked the names
    if not source.schema:
        msg = "the data has no columns; synthesize needs at least one, with a declared domain"
        raise DataError(msg)
    declared, requests = inference_requests(source.schema, run.domain, run.infer_domain, labels=run.labels)
    check_declared(source.schema, declared, run.labels, pending=[r.name for r in requests])  # before any row is read
    public_uses = run.public_uses
    if public_source is not None and run.public_use is None:
        public_uses = default_public_uses(run.labels, list(public_source.schema))
    if "labels" in public_uses:  # from the public table's schema: before a row of either table is read
        check_label_use(run.labels, list(public_source.schema))
    checked_uses = [use for use in ("reweight", "margins") if use in public_uses]  # public rows may be released
    if checked_uses:  # likewise: released public rows must hold every column
        check_columns([name for name in source.schema if name not in public_source.schema], checked_uses[0])
    approximate_share = APPROXIMATE_DELTA_SHARE if needs_approximate_delta(requests) else 0.0
    budget = split_budget(run.epsilon, run.delta, approximate_share)
    ledger = PrivacyLedger(budget.rho, budget.approximate_delta)
    if requests:  # one private pass over the inferred columns, charged before the domain exists
        declared.update(infer_declarations(source.inference_counts(requests), source.schema, requests,
                                           run.inference_share * budget.rho, ledger, streams.inference))
    domain = Domain.from_mapping(source.schema, declared, run.labels)
    constraints = read_constraints(run.constraints, domain)  # public rules against the public domain
    check_memory(relaxed_rows=run.relaxed_rows, n_coords=domain.n_categorical_coords + len(domain.numeric_columns),
                 n_numeric=len(domain.numeric_columns), n_columns=len(domain.columns), rows=run.rows,
                 n_linear_thresholds=run.n_linear_thresholds, n_mixed_marginals=run.n_mixed_marginals)
    # the public table, read freely (no charge) and checked before the pass over the sensitive rows
    public_table = None if public_source is None else read_public(public_source, domain)
    return Inputs(source, domain, requests, public_table, public_uses, budget, ledger, constraints)
