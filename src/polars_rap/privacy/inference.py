"""Private domain inference: bounds and categories learned from the data, under the budget.

The domain is public input (design.md §5). When the user has no public bounds or category
list for a column, this module learns them *privately*, in one pass over the data, charging
the same ledger as the synthesis; nothing here reads ``min``/``max``/``unique`` of the
sensitive data into a release. Replace-one neighbours, n public.

How a column is asked for:

``"numeric"`` (or ``infer_domain=True`` on a numeric, date, datetime or duration dtype)
    Bounds from a **noisy log-scale histogram** over fixed bins (rho-zCDP, sensitivity
    sqrt 2), whose outer bins clearing a threshold give coarse bounds (when none does, one
    error after the other columns names every such column and the declaration to add), refined by a **noisy binary search** inside those bins (Gaussian
    counts of sensitivity 1) when the rows are many enough for it to clip at most about 1% of
    them: :mod:`polars_rap.privacy.bounds` has the method and its derivation.
``{"candidates": [...]}``
    Categories from a declared candidate list: discrete Gaussian noise on the count of every
    candidate (rho-zCDP, sigma = 1/sqrt(rho)); candidates whose noisy count clears
    ``sigma * z + 1`` (an absent candidate clears it with probability at most ``0.05 /
    n_candidates``) are kept.
``"categorical"`` (or ``infer_domain=True`` on a text dtype)
    Categories from the data's own values, by **thresholded discrete Gaussian counts** (a
    sparse histogram): only values present in the data get a noisy count, and only those at
    or above ``tau = 2 + sigma * z`` are kept, z with ``P[N(0, 1) >= z] = delta_c``. A value
    held by exactly one row (the only kind present in one neighbour and absent from the
    other) is released when its noise X ~ N_Z(0, sigma^2) has X >= 1 + sigma * z, which has
    probability at most P[N(0, sigma^2) >= sigma * z] = ``delta_c`` (the discrete tail is the
    continuous one shifted by one count, :mod:`polars_rap.privacy.samplers`); on the values the
    neighbours share it is the discrete Gaussian mechanism. So the step is
    ``delta_c``-approximately rho-zCDP, and the ledger records ``delta_c`` (see
    :func:`polars_rap.privacy.accounting.split_budget` for the composition).

Inferred columns are nullable: a categorical column's null category also receives the values
that did not clear the threshold (a documented repair that keeps every row, counted for the
curator only), and a numeric column gets a null indicator. Whether the sensitive rows hold
nulls is itself private, so it is not asked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from polars_rap.privacy.bounds import BoundCounts, UnclearedBounds, _magnitude_bins, infer_bounds, magnitude_bin_edges  # noqa: F401
from polars_rap.privacy.bounds import threshold_for_rate as _threshold_for_rate
from polars_rap.schema.domain import Categorical, Numeric
from polars_rap.errors import DataError, ParameterError, warn_caller
from polars_rap.privacy.ledger import PrivacyEvent, PrivacyLedger, discrete_gaussian_noise, gaussian_mechanism, gaussian_noise_std
from polars_rap.privacy.samplers import words_from
from polars_rap.schema.temporal import is_temporal, to_internal

__all__ = [
    "InferenceCounts",
    "InferenceRequest",
    "inference_requests",
    "infer_declarations",
    "magnitude_bin_edges",
    "needs_approximate_delta",
]

_KINDS = ("categorical", "numeric")
_ABSENT_CANDIDATE_RATE = 0.05  # expected absent candidates kept, over the whole list


@dataclass(frozen=True, slots=True)
class InferenceRequest:
    """A column whose domain is to be learned privately.

    ``kind`` is ``"categorical"`` or ``"numeric"``; ``candidates`` is the declared candidate
    list of a categorical column (``None``: the data's own values, an approximate step).
    """

    name: str
    kind: str
    candidates: tuple | None = None

    @property
    def is_approximate(self) -> bool:
        """True for the data-values set union, which needs a share of delta."""
        return self.kind == "categorical" and self.candidates is None


def inference_requests(
    schema: Mapping[str, pl.DataType],
    domain: Mapping[str, Any] | None,
    infer_domain: bool | Sequence[str],
    labels: Sequence[str] = (),
) -> tuple[dict[str, Any], list[InferenceRequest]]:
    """Split the user's ``domain=`` into public declarations and columns to infer.

    Returns the mapping with the inference entries removed, and one request per inferred
    column, in frame order. ``infer_domain=True`` adds every column that has no declaration
    and no ``Enum``/``Boolean`` dtype (text dtypes: categorical, numeric dtypes: numeric);
    a sequence adds the columns it names the same way. A column in ``labels`` is categorical
    by definition (a list of classes), so it is inferred as categorical whatever its dtype:
    an integer-coded label such as ``SEX`` = 1/2 gets the thresholded counts of its values.
    """
    if isinstance(labels, str):
        labels = [labels]
    declared = dict(domain or {})
    if isinstance(infer_domain, str):
        infer_domain = [infer_domain]
    if isinstance(infer_domain, bool):
        named: set[str] = set()
    else:
        named = set(infer_domain)
        unknown = sorted(name for name in named if name not in schema)
        if unknown:
            msg = f"infer_domain names columns that are not in the data: {unknown}"
            raise ParameterError(msg)
    requests = []
    for name, dtype in schema.items():
        entry = declared.get(name)
        request = _request_from_entry(name, entry)
        if request is None and entry is None and (infer_domain is True or name in named):
            if isinstance(dtype, pl.Enum) or dtype == pl.Boolean:
                continue  # the dtype declares the categories
            is_numeric = (dtype.is_numeric() or is_temporal(dtype)) and name not in labels
            request = InferenceRequest(name, "numeric" if is_numeric else "categorical")
        elif request is None and name in named:
            msg = (
                f"column {name!r} is both declared in domain= ({entry!r}) and named in "
                "infer_domain; keep one"
            )
            raise ParameterError(msg)
        if request is not None:
            if request.kind == "numeric" and name in labels:
                msg = (
                    f"label column {name!r} is to be inferred as numeric, but a label is "
                    f"categorical (a list of classes): ask for 'categorical' or "
                    f"{{'candidates': [...]}} in domain=, or declare its classes"
                )
                raise ParameterError(msg)
            if request.kind == "numeric" and not (dtype.is_numeric() or is_temporal(dtype)):
                msg = (
                    f"column {name!r} is to be inferred as numeric but holds {dtype}; cast it "
                    f"to a number first or infer it as 'categorical'"
                )
                raise DataError(msg)
            declared.pop(name, None)
            requests.append(request)
    return declared, requests


def needs_approximate_delta(requests: Sequence[InferenceRequest]) -> bool:
    """Whether any request is a data-values set union (a delta-approximate step)."""
    return any(request.is_approximate for request in requests)


def _request_from_entry(name: str, entry: Any) -> InferenceRequest | None:
    if isinstance(entry, str):
        if entry not in _KINDS:
            msg = (
                f"domain entry for {name!r} is the string {entry!r}; a string asks for private "
                f"inference and must be one of {list(_KINDS)}"
            )
            raise ParameterError(msg)
        return InferenceRequest(name, entry)
    if isinstance(entry, Mapping) and "candidates" in entry:
        extra = sorted(set(entry) - {"candidates"})
        if extra:
            msg = f"domain entry for {name!r} has unknown keys {extra} beside 'candidates'"
            raise ParameterError(msg)
        candidates = [value for value in entry["candidates"] if value is not None]
        if not candidates or len(set(candidates)) != len(candidates):
            msg = f"column {name!r}: 'candidates' must be a non-empty list without repeats"
            raise ParameterError(msg)
        return InferenceRequest(name, "categorical", tuple(candidates))
    return None


# ------------------------------------------------------------------ counting pass
class InferenceCounts:
    """Counts accumulated over batches for every request (reads the sensitive data).

    ``n_rows`` (int), per numeric request a :class:`~polars_rap.privacy.bounds.BoundCounts`
    (``bounds[name]``), per categorical one a dict value -> int (``values[name]``). Counts of
    disjoint parts of the rows :meth:`merge` exactly, in any order, into the counts of the
    whole (the Ray engine counts each block apart and merges them on the driver).
    """

    def __init__(self, requests: Sequence[InferenceRequest]) -> None:
        self.requests = list(requests)
        self.n_rows = 0
        self.bounds = {r.name: BoundCounts() for r in requests if r.kind == "numeric"}
        self.values: dict[str, dict[Any, int]] = {r.name: {} for r in requests if r.kind == "categorical"}

    def merge(self, other: InferenceCounts) -> None:
        """Add the counts of ``other`` (same requests, other rows) into these, exactly."""
        if other.requests != self.requests:
            msg = "cannot merge inference counts of different requests"
            raise ValueError(msg)
        if self.n_rows + other.n_rows > np.iinfo(np.int64).max:  # no count exceeds n_rows
            msg = f"more than 2**63 - 1 rows ({self.n_rows:,} + {other.n_rows:,}): int64 counts would overflow"
            raise OverflowError(msg)
        self.n_rows += other.n_rows
        for name, bound_counts in other.bounds.items():
            self.bounds[name].merge(bound_counts)
        for name, counted in other.values.items():
            target = self.values[name]
            for value, count in counted.items():
                target[value] = target.get(value, 0) + count

    def add(self, batch: pl.DataFrame) -> None:
        self.n_rows += batch.height
        for request in self.requests:
            column = batch.get_column(request.name)
            if request.kind == "numeric":
                values = (to_internal(column) if is_temporal(column.dtype) else column.cast(pl.Float64)).to_numpy()
                values = values[np.isfinite(values)]  # nulls/NaN: the null indicator; inf: encode refuses
                self.bounds[request.name].add(values)
            else:
                if isinstance(column.dtype, (pl.Enum, pl.Categorical)):
                    column = column.cast(pl.String)
                if column.dtype.is_float():
                    column = _signless_zeros(column.fill_nan(None))
                counted = column.drop_nulls().value_counts(name="count")
                target = self.values[request.name]
                for value, count in counted.iter_rows():
                    target[value] = target.get(value, 0) + int(count)


def _signless_zeros(column: pl.Series) -> pl.Series:
    """The float ``column`` with -0.0 replaced by 0.0 (nulls kept).

    -0.0 == 0.0, so counting merges them under whichever zero comes first in the data; left
    alone, the sign of a released 0.0 category would depend on the rows' order and contents.
    """
    zero = pl.lit(0.0, dtype=column.dtype)
    return pl.select(pl.when(column == 0.0).then(zero).otherwise(column).alias(column.name)).to_series()


# ------------------------------------------------------------------ mechanisms
def _infer_from_candidates(name: str, counts: Mapping[Any, int], candidates: tuple,
                           rho: float, ledger: PrivacyLedger,
                           rng) -> Categorical:
    vector = np.array([counts.get(value, 0) for value in candidates], dtype=np.float64)
    noisy, sigma = gaussian_mechanism(
        vector, math.sqrt(2.0), rho, ledger, rng,
        description=f"categories of {name!r} (noisy counts of {len(candidates)} declared candidates)",
    )
    tau = _threshold_for_rate(sigma, _ABSENT_CANDIDATE_RATE / len(candidates))
    kept = [c for c, v in zip(candidates, noisy, strict=True) if v >= tau]
    if not kept:
        _warn_all_null(name, tau)
    return Categorical(kept, nullable=True, unlisted="null")


def _infer_from_values(name: str, counts: Mapping[Any, int], rho: float, delta: float,
                       ledger: PrivacyLedger, rng) -> Categorical:
    """Thresholded discrete Gaussian counts over the values present (delta-approximate
    rho-zCDP): ``tau = 1 + (sigma z + 1)``, see the module docstring."""
    sigma = gaussian_noise_std(math.sqrt(2.0), rho)
    tau = 1.0 + _threshold_for_rate(sigma, delta)
    words = words_from(rng)  # checked before the charge
    ledger.charge(PrivacyEvent(
        "gaussian_threshold", rho, f"categories of {name!r} (thresholded noisy counts)", delta=delta,
    ))
    values = sorted(counts, key=_sort_key)
    noise = discrete_gaussian_noise(2, rho, len(values), words)  # sensitivity sqrt 2, as sigma
    noisy = np.array([counts[v] for v in values], dtype=np.int64) + noise
    kept = [v for v, c in zip(values, noisy, strict=True) if c >= tau]
    if not kept:
        _warn_all_null(name, tau)
    return Categorical(kept, nullable=True, unlisted="null")


def _warn_all_null(name: str, threshold: float) -> None:
    """Say that an inferred column released no category, so it comes out all null (the
    threshold is public: it depends on the budget only)."""
    msg = (
        f"column {name!r}: no category cleared the privacy threshold (about {threshold:,.0f} rows "
        "per value at this budget), so every synthetic value of it will be null. Declare its "
        "categories from public documentation, or raise epsilon or inference_share"
    )
    warn_caller(msg)  # at the caller of synthesize


def _sort_key(value: Any) -> tuple:
    return (type(value).__name__, value)


def infer_declarations(
    batches: Iterable[pl.DataFrame] | InferenceCounts,
    schema: Mapping[str, pl.DataType],
    requests: Sequence[InferenceRequest],
    rho: float,
    ledger: PrivacyLedger,
    rng,
) -> dict[str, Categorical | Numeric]:
    """Learn the requested columns' domains in one pass over ``batches``, charging ``ledger``.

    Parameters
    ----------
    batches : iterable of pl.DataFrame, or InferenceCounts
        The sensitive rows (at least the requested columns), read once; or their counts,
        gathered beforehand (``source.inference_counts(requests)``, per block on Ray).
    schema : mapping
        Column dtypes (integer columns get integer bounds).
    requests : sequence of InferenceRequest
    rho : float
        zCDP budget for all of inference, split evenly over the requests.
    ledger : PrivacyLedger
        Charged before each release; its ``delta_budget`` is split evenly over the
        data-values (approximate) requests.
    rng : SecureRandom or numpy.random.Generator
        The OS's cryptographic source (real releases) or a seeded generator (research).

    Returns
    -------
    dict
        ``name -> Categorical | Numeric`` (all nullable), ready for ``domain=``.

    Raises
    ------
    UnclearedBounds
        A :class:`~polars_rap.errors.DataError` naming every numeric column whose noisy
        histogram had no bin above its threshold, each with the declaration to add, raised
        after every column's inference has run (and been charged), so that one run names them
        all.
    """
    if not requests:
        return {}
    n_approximate = sum(1 for request in requests if request.is_approximate)
    delta_each = ledger.delta_budget / n_approximate if n_approximate else 0.0
    while n_approximate and math.fsum([delta_each] * n_approximate) > ledger.delta_budget:
        delta_each = math.nextafter(delta_each, 0.0)  # an even split may round an ulp over
    if n_approximate and delta_each <= 0.0:
        names = [request.name for request in requests if request.is_approximate]
        msg = (
            f"the 'epsilon' parameter is too large for the 'delta' parameter to leave any delta to "
            f"the thresholded category inference of {names}: their share, about delta / (1 + "
            "e^epsilon), is 0 in floating point. Lower epsilon or raise delta, or declare those "
            "columns' categories (or {'candidates': [...]})"
        )
        raise ParameterError(msg)
    if isinstance(batches, InferenceCounts):
        counts = batches
    else:
        counts = InferenceCounts(requests)
        for batch in batches:
            counts.add(batch)
    share = rho / len(requests)
    declarations: dict[str, Categorical | Numeric] = {}
    uncleared: list[UnclearedBounds] = []
    for request in requests:
        if request.kind == "numeric":
            try:
                result: Categorical | Numeric = infer_bounds(
                    request.name, counts.bounds[request.name], counts.n_rows, schema[request.name],
                    share, ledger, rng,
                )
            except UnclearedBounds as error:  # charged; the other columns go on, to be named together
                uncleared.append(error)
                continue
        elif request.candidates is not None:
            result = _infer_from_candidates(
                request.name, counts.values[request.name], request.candidates, share, ledger, rng,
            )
        else:
            result = _infer_from_values(
                request.name, counts.values[request.name], share, delta_each, ledger, rng,
            )
        declarations[request.name] = result
    if uncleared:
        raise UnclearedBounds([name for error in uncleared for name in error.names],
                              [tau for error in uncleared for tau in error.thresholds],
                              [dtype for error in uncleared for dtype in error.dtypes])
    return declarations
